"""AvgPool's compiled loop (`pool_kernels.py`, numba) gives the numpy path's bits: windows that move
one element at a time over two axes, of kernel sizes 1 to 5, with dilations, padding
counted or excluded, floor and ceil rounding, f32/f64/f16/bf16, edge values (NaN, infinities,
-0.0, huge values whose sums overflow), on one thread and split into parts; a layer's first
call takes the numpy path, its later ones the loop; other geometries (strides, one or three
axes) stay on numpy's path; the input is not written."""

import sys

import numpy as np
import pytest
from helpers import element_dtypes

from irscatter.ir.graph import Layer, Port
from irscatter.ops.common import accel, threads
from irscatter.ops.pooling import avg_pool
from irscatter.ops.pooling.avg_pool import AvgPool16

FLOATS = element_dtypes("f32", "f64", "f16", "bf16")
EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 3e38, 3e38, -1e-40, 1.0]

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


def _op(kernel, strides, pads, dilations, exclude_pad, rounding="floor") -> AvgPool16:
    attrs = {"kernel": ",".join(map(str, kernel)), "strides": ",".join(map(str, strides)),
             "pads_begin": ",".join(map(str, pads[0])), "pads_end": ",".join(map(str, pads[1])),
             "dilations": ",".join(map(str, dilations)), "exclude-pad": str(exclude_pad).lower(),
             "rounding_type": rounding, "auto_pad": "explicit"}
    return AvgPool16(Layer(id=0, name="pool", type="AvgPool", version="opset16", attrs=attrs,
                           inputs=[Port(id=0)], outputs=[Port(id=1)]))


def _bits(a: np.ndarray) -> np.ndarray:
    """Bits, every NaN as one value (a NaN's payload depends on the order of its operands)."""
    bits = a.view(f"u{a.itemsize}").copy()
    bits[np.isnan(a.astype(np.float64))] = 0
    return bits


@pytest.mark.parametrize("dtype", list(FLOATS.values()), ids=list(FLOATS))
@pytest.mark.parametrize("split", [False, True], ids=["one-part", "parts"])
def test_the_compiled_loop_is_the_numpy_path(monkeypatch, dtype, split):
    monkeypatch.setattr(accel, "LOAD_ELEMENTS", 0)
    if split:
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(threads, "CORES", 3)
        monkeypatch.setattr(threads, "_policy", "split")
    loops = []
    window_means = __import__("irscatter.ops.pooling.pool_kernels", fromlist=["window_means"]).window_means
    monkeypatch.setattr(sys.modules[avg_pool.KERNELS], "window_means", lambda *a: loops.append(a[-1].shape) or
                        window_means(*a))
    rng = np.random.default_rng(4)
    cases = [  # shape, kernel, strides, (pads begin, pads end), dilations, exclude-pad, rounding
        ((1, 4, 9, 8), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), True, "floor"),
        ((2, 3, 7, 7), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), False, "floor"),
        ((1, 2, 11, 6), (5, 2), (1, 1), ((2, 0), (2, 1)), (1, 2), True, "ceil"),
        ((3, 2, 5, 5), (2, 2), (1, 1), ((0, 0), (0, 0)), (1, 1), False, "floor"),  # no padding
        ((1, 1, 6, 9), (1, 4), (1, 1), ((0, 1), (0, 2)), (2, 1), True, "floor"),
        ((2, 6, 30, 20), (3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), True, "floor"),  # several planes a part
        ((1, 2, 4, 5, 6), (3, 3, 3), (1, 1, 1), ((1, 1, 1), (1, 1, 1)), (1, 1, 1), True, "floor"),  # three axes: numpy's
        ((1, 3, 8, 8), (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), True, "floor"),  # strides: numpy's path
        ((1, 3, 8), (3,), (1,), ((1,), (1,)), (1,), True, "floor"),  # one axis: numpy's path
    ]
    for k, (shape, kernel, strides, pads, dilations, exclude_pad, rounding) in enumerate(cases):
        data = (rng.standard_normal(shape) * 3).astype(dtype)
        if k % 2 == 0:
            with np.errstate(over="ignore"):
                data.reshape(-1)[:len(EDGES)] = np.array(EDGES, np.float64).astype(dtype)
        before = data.copy()
        op = _op(kernel, strides, pads, dilations, exclude_pad, rounding)
        with accel.use("numpy"):
            expected = op.compute(data)
        with accel.use("auto"):
            first = op.compute(data)  # (the first call: numpy's path, then the loop)
            got = op.compute(data)
        for result in (first, got):
            assert result.dtype == expected.dtype and result.shape == expected.shape
            assert np.array_equal(_bits(result), _bits(expected)), (shape, kernel, pads, dilations, exclude_pad)
        assert np.array_equal(data, before, equal_nan=True)
    assert len(loops) >= 6  # (the six geometries of stride 1 over two axes took the loop)


def test_a_size_zero_batch_keeps_the_numpy_path(monkeypatch):
    monkeypatch.setattr(accel, "LOAD_ELEMENTS", 0)
    op = _op((3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), True)
    with accel.use("auto"):
        for _ in range(2):
            assert op.compute(np.ones((0, 2, 5, 5), np.float32)).shape == (0, 2, 5, 5)
