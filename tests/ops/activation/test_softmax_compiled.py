"""The compiled passes of a softmax along rows (`softmax_kernels.py`, numba) give the numpy path's
bits: Softmax-8 over the last axis of ranks 1 to 5, size-0 dims, every float type, edge values
(NaN, infinities, rows of -inf only, zeros of both signs as a row's maximum, huge and subnormal
values), contiguous or not, on one thread and split into parts; ScaledDotProductAttention's
blocks with every kind of mask, causal or not; a layer's first call takes numpy's path, its later
ones the compiled passes; the inputs are not written."""

import numpy as np
import pytest
from helpers import element_dtypes, numpy_then_compiled, sdpa_op

from irscatter.ir.graph import Layer, Port
from irscatter.ops.activation.softmax import Softmax8
from irscatter.ops.common import accel, softmax_kernels, threads
from irscatter.ops.matrix import attention_blocks

FLOATS = element_dtypes("f32", "f64", "f16", "bf16")
EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 3e38, -3e38, 1e-40, 1.0]

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


def _counted(monkeypatch, name: str) -> list:
    """The calls of one of `softmax_kernels`' loops, recorded from now on."""
    calls: list = []
    loop = getattr(softmax_kernels, name)
    monkeypatch.setattr(softmax_kernels, name, lambda *a: calls.append(a[0].shape) or loop(*a))
    return calls


def _softmax() -> Softmax8:
    return Softmax8(Layer(id=0, name="softmax", type="Softmax", version="opset8", attrs={"axis": "-1"},
                          inputs=[Port(id=0)], outputs=[Port(id=1)]))


def _rows_with_edges(rng, shape, dtype) -> np.ndarray:
    """Random values, and where there are rows enough: edge values in the first rows, a row of
    -inf only, and a row whose maximum is zero of both signs."""
    data = (rng.standard_normal(shape) * 4).astype(dtype)
    rows = data.reshape(-1, shape[-1]) if data.size else data.reshape(0, 0)
    with np.errstate(over="ignore"):
        for r, edge in enumerate(EDGES[:len(rows)]):
            rows[r, r % rows.shape[1]] = dtype(edge)
    if len(rows) > len(EDGES) + 1 and rows.shape[1] >= 2:
        rows[len(EDGES)] = dtype(-np.inf)
        rows[len(EDGES) + 1] = -np.abs(rows[len(EDGES) + 1]) - 1
        rows[len(EDGES) + 1, :2] = np.array([-0.0, 0.0]).astype(dtype)
    return data


@pytest.mark.parametrize("dtype", list(FLOATS.values()), ids=list(FLOATS))
def test_softmax_keeps_the_numpy_bits(compiled_split, monkeypatch, dtype):
    passes = _counted(monkeypatch, "shifted")
    rng = np.random.default_rng(8)
    for shape in [(7,), (12, 5), (3, 4, 33), (2, 3, 4, 130), (2, 1, 3, 2, 17), (4, 0, 3), (3, 1)]:
        data = _rows_with_edges(rng, shape, dtype)
        got = numpy_then_compiled(_softmax(), data)
        if data.size:
            assert np.isnan(got.reshape(-1, shape[-1])[0]).all()  # a row holding NaN
    assert passes  # (the second calls took the compiled passes)


def test_softmax_of_a_view_keeps_the_numpy_bits(compiled_split):
    data = np.random.default_rng(9).standard_normal((6, 40, 20)).astype(np.float32)
    numpy_then_compiled(_softmax(), data.transpose(1, 0, 2)[::2])  # (its output is laid out as the transpose)
    numpy_then_compiled(_softmax(), data[:, ::3, 1:])  # (its output is C-contiguous)


def test_the_maximum_by_keys_orders_every_float_as_numpy_does():
    rng = np.random.default_rng(10)
    for dtype in (np.float32, np.float64):
        specials = np.array([-np.inf, np.inf, -0.0, 0.0, 1e-310 if dtype == np.float64 else 1e-40,
                             -np.finfo(dtype).max, np.finfo(dtype).max, np.finfo(dtype).tiny], dtype)
        rows = rng.choice(np.concatenate([specials, rng.standard_normal(20).astype(dtype)]), (500, 9))
        out = np.empty_like(rows)
        softmax_kernels.shift_rows(rows, out)
        with np.errstate(invalid="ignore"):
            assert np.array_equal(out, rows - rows.max(axis=-1, keepdims=True), equal_nan=True)


MASKS = {
    "none": None,
    "boolean [L, S] with a fully masked row": lambda g, b, L, S: np.concatenate(
        [np.zeros((1, S), bool), g.random((L - 1, S)) < 0.8]),
    "float [1, S]": lambda g, b, L, S: g.standard_normal((1, S)),
    "float [N, H, L, S]": lambda g, b, L, S: g.standard_normal((*b, L, S)),
    "scalar": lambda g, b, L, S: np.float64(0.25),
}


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("causal", [False, True], ids=["", "causal"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_blocks_keep_the_numpy_bits(compiled_split, monkeypatch, mask, causal, dtype):
    monkeypatch.setattr(attention_blocks, "BLOCK_LOGITS", 1 << 10)
    monkeypatch.setattr(threads, "SPLIT_WORK", 0)  # (the blocks' own threshold)
    generator = np.random.default_rng(11)
    batch, rows, source = (2, 3), 70, 45
    q = generator.standard_normal((*batch, rows, 16)).astype(dtype) * 2
    k = generator.standard_normal((*batch, source, 16)).astype(dtype)
    v = generator.standard_normal((*batch, source, 8)).astype(dtype)
    q[0, 0, 0, 0] = np.nan  # a row of NaN logits
    k[0, 1, 3, 0] = np.inf  # a column of infinities
    arrays = [q, k, v]
    if MASKS[mask] is not None:
        m = np.asarray(MASKS[mask](generator, batch, rows, source))
        arrays.append(m if m.dtype == bool else m.astype(dtype))
    passes, taken = _counted(monkeypatch, "scaled_shifted"), []
    usable = attention_blocks.usable
    monkeypatch.setattr(attention_blocks, "usable", lambda *a: taken.append(usable(*a)) or taken[-1])
    numpy_then_compiled(sdpa_op(causal, len(arrays)), *arrays)
    assert taken and all(taken) and passes
