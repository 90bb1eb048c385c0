"""RandomPoisson-17 against the page: its stated examples, and a literal transcription of its
algorithm in `oracles.generation.random_poisson` (Philox and MT19937 one block or word at a
time, Knuth's and Hormann's loops one uniform at a time, in Python's math).

The pinned OpenVINO does not ship RandomPoisson (a draft of opset17), so no case is judged by it;
the page's example values come from OpenVINO's newer core reference, which the oracle follows
where the page is silent (the f64 uniform layouts, TensorFlow's 256 blocks per output).

Covered: bf16, f16, f32, f64 rates; both alignments (spelt as the page spells them, upper case);
seeds 0/0, the page's, beyond 32 bits; ranks 1 to 4 and a size-0 dimension; rates 0, below 10,
exactly 10, large, infinite; long runs of Hormann rates (the "pytorch" table of delays, with and
without running out of it). Errors: negative and NaN rates (rate-value), integer rates
(float-type), scalar rates (rates-rank), an unknown alignment (attributes).
"""

from __future__ import annotations

from functools import partial

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from helpers import OP_SPECS
from oracles import generation as oracle

from irscatter import examples
from irscatter.ops.generation.random_poisson import _TwisterStream, hormann_constants, twister_counts

WHY = "OpenVINO 2026.4.1 does not ship RandomPoisson (a draft of opset17): the page's algorithm judges"
TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]
SEEDS = [(150, 77), (0, 0), (2**40 + 3, 2**33 + 9)]


def _case(cid, rates, alignment="tensorflow", seeds=(150, 77), *, error=None, const=False):
    attrs = {"global_seed": seeds[0], "op_seed": seeds[1], "alignment": alignment}
    return Case(cid, "RandomPoisson", "opset17", [Input("input", rates, const=const)], attrs,
                oracle=partial(oracle.random_poisson, **attrs), openvino="none", why=WHY, error=error)


def _cases() -> list[Case]:
    rng = np.random.default_rng(17)
    out = []
    for k, t in enumerate(TYPES):
        for alignment in ("tensorflow", "PYTORCH"):
            for shape in ((7,), (2, 3), (2, 1, 3), (1, 2, 2, 2), (3, 0)):
                rates = rng.uniform(0, 25, shape) * (rng.random(shape) > 0.2)  # some zeros
                seeds = SEEDS[(k + len(out)) % len(SEEDS)]
                out.append(_case(f"{np.dtype(t).name}-{alignment}-{shape}-{seeds[0]}", rates.astype(t), alignment,
                                 seeds, const=len(out) % 3 == 0))
    f32 = np.float32
    edges = np.array([0, 10, 9.999999, 1e-30, 1e6, np.inf, 3e38, 0, 10], f32)
    out += [
        _case("edges-tensorflow", edges),
        _case("edges-pytorch", edges, "pytorch"),
        _case("edges-f16", np.array([0, 10, 60000, np.inf, 2, 65504], np.float16), "pytorch"),
        _case("hormann-run-pytorch", rng.uniform(10, 12, 150).astype(f32), "pytorch", (5, 0)),
        _case("hormann-run-tensorflow", rng.uniform(10, 12, 40).astype(f32), "TensorFlow", (5, 6)),
        _case("runs-between-knuth", np.tile(np.array([12, 30, 4, 50, 11, 11, 0, 2], f32), 6), "pytorch"),
        _case("negative", np.array([1, -1], f32), error="rate-value"),
        _case("nan", np.array([[1, np.nan]], f32), "pytorch", error="rate-value"),
        _case("integers", np.array([1, 2], np.int32), error="float-type"),
        _case("scalar", np.array(3, f32), error="rates-rank"),
        _case("bad-alignment", np.array([1], f32), "numpy", error="attributes"),
    ]
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_random_poisson(case):
    harness.check(case, CASES)


# The page's three examples stated as code: rates and seeds in, counts out.
PAGE = [
    (range(1, 10), 150, 69, "pytorch", [1, 2, 2, 2, 3, 8, 9, 11, 5]),
    (range(11, 20), 150, 69, "pytorch", [14, 11, 15, 20, 9, 20, 15, 17, 21]),
    (range(0, 41, 5), 150, 77, "tensorflow", [0, 4, 5, 12, 21, 20, 38, 39, 34]),
]


@pytest.mark.parametrize("rates, global_seed, op_seed, alignment, counts", PAGE)
def test_the_pages_examples(rates, global_seed, op_seed, alignment, counts):
    from irscatter.ops import registry
    from irscatter.ops.functional import call

    op = registry.find("RandomPoisson", "opset17")
    got = call(op, [np.array(list(rates), np.float32)],
               {"global_seed": global_seed, "op_seed": op_seed, "alignment": alignment})
    assert got.dtype == np.float32 and got.tolist() == counts


@pytest.mark.skipif(not OP_SPECS.is_dir(), reason="the spec pages are not beside this checkout")
def test_the_pages_layers_give_their_stated_values():
    found = examples.run_document(OP_SPECS / "generation" / "random-poisson-17.rst")
    assert [ex.status for ex in found] == ["passed"] * 4, [ex.reason for ex in found]


def test_hormann_rates_that_run_out_of_the_table_of_delays_start_a_new_one():
    """A table one delay deep makes every refusal start a new table: the counts and the stream's
    end stay those of the oracle."""
    rates = np.full(30, 10.0)
    stream = _TwisterStream(7, 10)
    got = stream.hormann(hormann_constants(rates), depth=1)
    assert got.tolist() == oracle.random_poisson(rates, global_seed=7, alignment="pytorch").tolist()
    assert got.tolist() == twister_counts(rates, 7).tolist()
    after = np.append(rates, 3.0)  # the next rate takes its draws where the run stopped
    assert twister_counts(after, 7)[-1] == oracle.random_poisson(after, global_seed=7, alignment="pytorch")[-1]
