"""Multinomial-13 against a per-draw oracle (exact indices), and statistically against OpenVINO's
CPU plugin.

The indices are exact against the oracle, which draws its uniforms with the RandomUniform oracle
(Philox per block, in the probs' type: the draws of OpenVINO's core reference, whose
RandomUniform the RandomUniform tests hold bit for bit) and scans each row's CDF linearly. The
core reference of Multinomial cannot be run from Python (OpenVINO's op has no evaluate), and the
CPU plugin draws from std::mt19937 instead, so OpenVINO judges no case exactly: the plugin is
compared by frequencies over many draws instead.

Covered: probs f32, f16, bf16, f64; with and without replacement (num_samples up to the class
count: every class once); log_probs with large and negative logits; zero-probability classes;
convert_type i32 and i64; num_samples as i32/i64 scalar or [1], Const or Parameter; batch 0,
num_samples 0, a row of zeros (index 0); seeds 0/0, small and past 2^32. Errors: 1-D and 3-D
probs, integer probs, float num_samples, two-element num_samples, negative num_samples, more
samples than classes without replacement (at inference and at run time), convert_type f32.
"""

from __future__ import annotations

import tempfile
from functools import partial
from pathlib import Path

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import generation as oracle

WHY = ("OpenVINO's CPU plugin draws from std::mt19937 (its core reference, which irscatter follows, from "
       "RandomUniform's Philox) and the core reference has no evaluate reachable from Python")
PROBS_TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]
SEEDS = [(0, 0), (1, 2), (234, 148), (2**32 + 3, 7), (5, 2**40), (99, 0)]


def _case(cid, probs, samples, *, replacement, log_probs, out="i32", seeds=(1, 2), stype=np.int32, vector=False,
          const=True):
    attrs = {"convert_type": out, "with_replacement": replacement, "log_probs": log_probs,
             "global_seed": seeds[0], "op_seed": seeds[1]}
    n = np.array([samples] if vector else samples, stype)
    return Case(cid, "Multinomial", "opset13", [Input("probs", probs), Input("num_samples", n, const=const)],
                attrs, oracle=partial(oracle.multinomial, **attrs), openvino="none", why=WHY)


def _cases() -> list[Case]:
    rng = np.random.default_rng(13)
    out = []
    k = 0
    for t in PROBS_TYPES:
        for replacement in (True, False):
            for log_probs in (False, True):
                for shape in ((1, 3), (4, 6), (3, 17), (0, 5), (2, 1)):
                    if log_probs:
                        probs = rng.uniform(-6, 6, shape)
                    else:
                        probs = rng.uniform(0, 1, shape) * (rng.random(shape) > 0.2)  # some classes of probability 0
                        if probs.size:
                            probs[..., 0] += 0.01  # no row of zeros here
                    samples = shape[1] if not replacement else int(rng.integers(0, 40))
                    seeds = SEEDS[k % len(SEEDS)]
                    out.append(_case(f"{np.dtype(t)}-rep{int(replacement)}-log{int(log_probs)}-{shape}-n{samples}-"
                                     f"{seeds[0]}-{seeds[1]}", probs.astype(t), samples, replacement=replacement,
                                     log_probs=log_probs, out="i64" if k % 2 else "i32", seeds=seeds,
                                     stype=np.int64 if k % 3 else np.int32, vector=bool(k % 2), const=bool(k % 4)))
                    k += 1
    f32 = np.float32
    out += [
        _case("spec-example-1", np.array([[0.1, 0.5, 0.4]], f32), 5, replacement=True, log_probs=False, seeds=(234, 148)),
        _case("spec-example-2", np.array([[-1, 1, 2], [50, 1, 21]], f32), 10, replacement=True, log_probs=True,
              seeds=(234, 148)),
        _case("spec-example-3", np.array([[0.1, 0.5, 0.4]], f32), 2, replacement=False, log_probs=False,
              seeds=(234, 148)),
        _case("fewer-without-replacement", np.array([[0.2, 0.3, 0.1, 0.4]] * 3, f32), 2, replacement=False,
              log_probs=False, seeds=(8, 9)),
        _case("row-of-zeros", np.array([[0, 0, 0], [1, 1, 1]], f32), 4, replacement=True, log_probs=False),
        _case("row-of-zeros-no-replacement", np.array([[0, 0, 0], [1, 1, 1]], f32), 2, replacement=False,
              log_probs=False),
        _case("no-samples", np.array([[0.5, 0.5]], f32), 0, replacement=True, log_probs=False),
        _case("no-classes", np.zeros((2, 0), f32), 3, replacement=True, log_probs=False),
        _case("large-logits", np.array([[800, 1, 790]], f32), 6, replacement=True, log_probs=True),
    ]
    base = [Input("probs", np.array([[0.5, 0.5]], f32))]
    attrs = {"convert_type": "i32", "with_replacement": True, "log_probs": False}
    no_rep = dict(attrs, with_replacement=False)
    out += [
        Case("probs-1d", "Multinomial", "opset13", [Input("probs", np.array([0.5, 0.5], f32)),
             Input("num_samples", np.array(2, np.int32))], attrs, error="probs-rank"),
        Case("probs-3d", "Multinomial", "opset13", [Input("probs", np.ones((1, 2, 2), f32)),
             Input("num_samples", np.array(2, np.int32))], attrs, error="probs-rank"),
        Case("probs-integer", "Multinomial", "opset13", [Input("probs", np.ones((1, 2), np.int32)),
             Input("num_samples", np.array(2, np.int32))], attrs, error="float-type"),
        Case("samples-float", "Multinomial", "opset13", [*base, Input("num_samples", np.array(2, f32))], attrs,
             error="integer-type"),
        Case("samples-two", "Multinomial", "opset13", [*base, Input("num_samples", np.array([2, 2], np.int32))],
             attrs, error="scalar-input"),
        Case("samples-negative", "Multinomial", "opset13",
             [*base, Input("num_samples", np.array(-1, np.int32), const=True)], attrs, error="num-samples-value"),
        Case("samples-over-classes", "Multinomial", "opset13",
             [*base, Input("num_samples", np.array(3, np.int64), const=True)], no_rep, error="num-samples-value"),
        Case("samples-over-classes-runtime", "Multinomial", "opset13",
             [*base, Input("num_samples", np.array(3, np.int64))], no_rep, error="num-samples-value"),
        Case("convert-f32", "Multinomial", "opset13", [*base, Input("num_samples", np.array(2, np.int32))],
             dict(attrs, convert_type="f32"), error="output-type"),
        Case("too-large", "Multinomial", "opset13",
             [*base, Input("num_samples", np.array(2**40, np.int64), const=True)], attrs, error="tensor-limit"),
    ]
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_multinomial(case):
    harness.check(case, CASES)


PROBS = np.array([[0.1, 0.5, 0.4], [0.25, 0.0, 0.75], [0.7, 0.2, 0.1]], np.float32)
DRAWS = 20000


def _frequencies(indices: np.ndarray) -> np.ndarray:
    return np.stack([np.bincount(row, minlength=PROBS.shape[1]) / indices.shape[1] for row in indices])


@pytest.mark.parametrize("log_probs", [False, True])
def test_frequencies_match_the_cpu_plugin(log_probs):
    """20000 draws per row: irscatter's and the CPU plugin's frequencies are both within 0.02 of
    the probabilities (about six standard deviations), and no zero-probability class is drawn."""
    from helpers import run_ov

    probs = np.log(np.maximum(PROBS, 1e-30)).astype(np.float32) if log_probs else PROBS
    case = _case("frequencies", probs, DRAWS, replacement=True, log_probs=log_probs, seeds=(3, 4))
    ours = harness.run_irscatter(case)[0]
    writer = harness._Writer()
    writer.add(case, "")
    with tempfile.TemporaryDirectory() as folder:
        theirs = run_ov(writer.save(Path(folder)), harness._feeds(case, ""))[0]
    for indices in (ours, theirs):
        assert np.abs(_frequencies(indices) - PROBS).max() < 0.02
        assert not (indices[1] == 1).any()


def test_without_replacement_draws_each_class_once():
    """num_samples equal to the class count: every row is a permutation of the classes, and the
    first draw follows the probabilities (0.6 of rows start with the heaviest class)."""
    probs = np.tile(np.array([[0.6, 0.3, 0.1]], np.float32), (4000, 1))
    case = _case("permutations", probs, 3, replacement=False, log_probs=False, seeds=(11, 12))
    out = harness.run_irscatter(case)[0]
    assert (np.sort(out, axis=1) == np.arange(3)).all()
    assert abs((out[:, 0] == 0).mean() - 0.6) < 0.03
