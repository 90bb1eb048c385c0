"""What the tests of the state-space ops share: their inputs, the tolerance of a comparison,
and OpenVINO's CPU plugin on their cases, out of process (a test module hands all its cases
over at once; each is written as a one-layer IR, `version="extension"`, and run by
tests/data/state_space_openvino.py in one worker process)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from helpers import OP_SPECS, one_layer_ir

import irscatter
from irscatter import examples
from irscatter.ops import registry
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tests" / "data" / "state_space_openvino.py"


def _script():
    spec = importlib.util.spec_from_file_location("state_space_openvino", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines pack and unpack; OpenVINO is imported by main alone
    return module


@dataclass
class Answer:
    """What the plugin made of one case: its outputs and its inputs after the run, or its refusal."""

    outputs: list[np.ndarray] | None = None
    inputs: list[np.ndarray] | None = None
    refused: str | None = None


def output_ports(type_: str, arrays: list[np.ndarray]) -> list[tuple[tuple[int, ...], np.dtype]]:
    """The (shape, dtype) of each output of the op on `arrays`, as irscatter infers them."""
    infos = make_op(registry.find(type_, "extension"), {}).infer(*(TensorInfo.of(a) for a in arrays))
    return [(info.shape.to_tuple(), info.etype.dtype) for info in (infos if isinstance(infos, tuple) else (infos,))]


def plugin_answers(folder: Path, type_: str, cases: dict[str, list[np.ndarray]]) -> dict[str, Answer]:
    """The plugin's answers to `cases` (name -> inputs) of one op type, or a skip without OpenVINO."""
    pytest.importorskip("openvino", reason="openvino is not installed, so the comparison with its CPU plugin did not run")
    return run(folder, {name: (type_, arrays) for name, arrays in cases.items()})


def run(folder: Path, cases: dict[str, tuple[str, list[np.ndarray]]]) -> dict[str, Answer]:
    """cases: name -> (op type, inputs in order). Every case in one worker run."""
    script = _script()
    for name, (type_, arrays) in cases.items():
        one_layer_ir(folder, type_, "extension", {}, [(f"in{i}", a) for i, a in enumerate(arrays)],
                     output_ports(type_, arrays), name=name)
        np.savez(folder / f"{name}.npz", **script.pack({f"in{i}": a for i, a in enumerate(arrays)}))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(SCRIPT), str(folder)], capture_output=True, text=True, timeout=300,
                          env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    answers = {}
    for name, (_, arrays) in cases.items():
        refusal = folder / f"{name}.refused.txt"
        if refusal.exists():
            answers[name] = Answer(refused=refusal.read_text())
            continue
        stored = script.unpack(np.load(folder / f"{name}.out.npz"))
        outputs = [stored[f"out{k}"] for k in range(sum(key.startswith("out") for key in stored))]
        answers[name] = Answer(outputs, [stored[f"in{i}"] for i in range(len(arrays))])
    return answers


# --- inputs -----------------------------------------------------------------------------------

I32 = np.int32


def selective_inputs(rng, batch, length, heads, groups, head_dim, size, dtype=np.float32):
    """A, dt, B, x, C, recurrent_state of SelectiveSSM and SSM: decaying heads, positive steps."""
    return [(-rng.uniform(0.1, 2, heads)).astype(dtype), rng.uniform(0.01, 1, (batch, length, heads)).astype(dtype),
            rng.standard_normal((batch, length, groups, size)).astype(dtype),
            rng.standard_normal((batch, length, heads, head_dim)).astype(dtype),
            rng.standard_normal((batch, length, groups, size)).astype(dtype),
            rng.standard_normal((batch, heads, head_dim, size)).astype(dtype)]


def metadata(sequences):
    """The five metadata inputs of a paged step; sequences: (new tokens, processed, interval, slots)."""
    return [np.cumsum([0] + [n for n, _, _, _ in sequences]).astype(I32),
            np.array([b for _, _, _, slots in sequences for b in slots], I32),
            np.cumsum([0] + [len(slots) for _, _, _, slots in sequences]).astype(I32),
            np.array([p for _, p, _, _ in sequences], I32), np.array([i for _, _, i, _ in sequences], I32)]


def paged_ssm_inputs(rng, sequences, heads=4, groups=2, head_dim=3, size=5, rows=8, dtype=np.float32,
                     table_dtype=None):
    """The 11 inputs of PagedSelectiveSSM for one step of `sequences` (see `metadata`)."""
    tokens = sum(n for n, _, _, _ in sequences)
    a, dt, b, x, c, _ = selective_inputs(rng, 1, tokens, heads, groups, head_dim, size, dtype)
    table = rng.standard_normal((rows, heads, head_dim, size)).astype(table_dtype or dtype)
    return [a, dt[0], b[0], x[0], c[0], table, *metadata(sequences)]


def paged_conv_inputs(rng, sequences, hidden=6, kernel=4, per_group=1, rows=8, dtype=np.float32, bias=True):
    """The 9 inputs of PagedCausalConv1D for one step of `sequences` (see `metadata`)."""
    tokens = sum(n for n, _, _, _ in sequences)
    return [rng.standard_normal((tokens, hidden)).astype(dtype),
            rng.standard_normal((rows, hidden, kernel)).astype(dtype),
            rng.standard_normal((hidden, per_group, kernel)).astype(dtype),
            rng.standard_normal(hidden if bias else 0).astype(dtype), *metadata(sequences)]


# --- comparing ----------------------------------------------------------------------------------

# How far apart two answers may be, relative to the largest magnitude of the expected one: the
# rounding of the output type, with room for f32 sums taken in another order.
RELATIVE = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 3e-6, np.dtype(np.float16): 1e-3,
            np.dtype(ml_dtypes.bfloat16): 8e-3, np.dtype(ml_dtypes.float8_e4m3fn): 7e-2}


def assert_near(got, want, what=""):
    """`got` (of its element type) against `want` (any float type), NaN where NaN, inf where inf."""
    got = np.asarray(got)
    assert got.shape == np.shape(want), (what, got.shape, np.shape(want))
    rtol = RELATIVE[got.dtype]
    want = np.asarray(want, np.float64)
    finite = np.isfinite(want)
    scale = np.abs(want[finite]).max(initial=1.0)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=rtol * scale, equal_nan=True,
                               err_msg=what)


# --- checks every test module makes -----------------------------------------------------------------


def against_the_page(function, page_function, arrays, what=("output", "state")):
    """`function(arrays)` (a tuple of outputs) near the page's answer, the inputs left as they were."""
    kept = [a.copy() for a in arrays]
    got = function(arrays)
    assert all(np.array_equal(a, k, equal_nan=True) for a, k in zip(arrays, kept))  # inputs never written
    with np.errstate(invalid="ignore", over="ignore"):  # the page's own arithmetic meets NaN and inf too
        want = page_function(*arrays)
    for name, g, w in zip(what, got, want):
        assert_near(g, w, f"{name} against the page")
    return got


def check_paged_step(function, page_function, arrays, table: int, answer: Answer | None = None) -> None:
    """A paged op's output and table after the step against the page, and against the plugin's
    when `answer` is given (its table only when f32: of other types the plugin updates a copy)."""
    out, after = against_the_page(lambda a: function(*a), page_function, arrays, ("output", "table"))
    assert after.dtype == arrays[table].dtype
    if answer is None:
        return
    assert answer.refused is None, answer.refused
    assert_near(out, answer.outputs[0], "output against the plugin")
    if after.dtype == np.float32:
        assert_near(after, answer.inputs[table], "table against the plugin")


def assert_refused(function, arrays, cls, label, port):
    with pytest.raises(irscatter.IRError) as caught:
        function(arrays)
    assert caught.value.label == label
    assert caught.value.port == cls.port(port)


def check_example(page: str, type_: str) -> None:
    """The page's one example runs: it lists no values, so its output dims are what is checked."""
    path = OP_SPECS / "internal" / page
    if not path.exists():
        pytest.skip("the spec pages are not beside this checkout")
    (example,) = examples.run_document(path)
    assert example.status == "shape-checked" and example.type == type_, example.reason


def check_donation(folder: Path, cls, arrays, function) -> None:
    """A model run leaves a fed table alone, and updates it when donated; nothing else is written."""
    names = list(cls.inputs)
    table = names[cls.table]
    model = irscatter.read_model(one_layer_ir(folder, cls.type_name, "extension", {}, list(zip(names, arrays)),
                                              output_ports(cls.type_name, arrays)))
    feeds = dict(zip(names, arrays))
    kept = {k: v.copy() for k, v in feeds.items()}
    want_out, want_table = function(*arrays)
    (out,) = model.run(feeds).values()
    np.testing.assert_array_equal(out, want_out)
    assert all(np.array_equal(kept[k], feeds[k]) for k in feeds)  # nothing donated: nothing written
    (out,) = model.run(feeds, donate=[table]).values()
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(feeds[table], want_table)  # the caller's table holds the step
    assert all(np.array_equal(kept[k], feeds[k]) for k in feeds if k != table)
