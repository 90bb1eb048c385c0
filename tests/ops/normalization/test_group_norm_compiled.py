"""GroupNormalization's compiled passes (`norm_kernels.py`, numba) give the numpy path's bits: ranks
2 to 5, one group to one per channel, every float type, edge values (NaN, infinities, -0.0,
huge and subnormal values), on one thread and split into parts; a layer's first call takes the
numpy path, its later ones the compiled passes; the inputs are not written."""

import numpy as np
import pytest
from helpers import element_dtypes

from irscatter.ir.graph import Layer, Port
from irscatter.ops.common import accel, threads
from irscatter.ops.normalization import group_normalization
from irscatter.ops.normalization.group_normalization import GroupNormalization

FLOATS = element_dtypes("f32", "f64", "f16", "bf16")
EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 3e38, -3e38, 1e-40, 1.0]

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


def _op(groups: int, epsilon: float) -> GroupNormalization:
    return GroupNormalization(Layer(id=0, name="gn", type="GroupNormalization", version="opset12",
                                    attrs={"num_groups": str(groups), "epsilon": str(epsilon)},
                                    inputs=[Port(id=i) for i in range(3)], outputs=[Port(id=3)]))


def _bits(a: np.ndarray) -> np.ndarray:
    """Bits, every NaN as one value (a NaN's payload depends on the order of its operands)."""
    bits = a.view(f"u{a.itemsize}").copy()
    bits[np.isnan(a.astype(np.float64))] = 0
    return bits


def _data(rng, shape, dtype, edges):
    data = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    if edges:
        flat = data.reshape(-1)
        with np.errstate(over="ignore"):
            flat[:len(EDGES)] = np.array(EDGES[:flat.size], np.float64).astype(dtype)
    return data


@pytest.mark.parametrize("dtype", list(FLOATS.values()), ids=list(FLOATS))
@pytest.mark.parametrize("split", [False, True], ids=["one-part", "parts"])
def test_the_compiled_passes_are_the_numpy_path(monkeypatch, dtype, split):
    monkeypatch.setattr(accel, "LOAD_ELEMENTS", 0)
    if split:
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(threads, "CORES", 3)
        monkeypatch.setattr(threads, "_policy", "split")
    rng = np.random.default_rng(2)
    cases = [((3, 4), 2), ((2, 6, 5), 3), ((1, 8, 7, 9), 1), ((2, 4, 3, 2, 5), 4), ((1, 12, 300), 12),
             ((5, 6, 4, 4), 6), ((1, 3, 1), 1)]
    for k, (shape, groups) in enumerate(cases):
        for edges in (False, True):
            data = _data(rng, shape, dtype, edges)
            scale = _data(rng, shape[1:2], dtype, False)
            bias = _data(rng, shape[1:2], dtype, False)
            before = [a.copy() for a in (data, scale, bias)]
            op = _op(groups, [1e-5, 0.0, 0.5][k % 3])
            with accel.use("numpy"):
                expected = op.compute(data, scale, bias)
            with accel.use("auto"):
                first = op.compute(data, scale, bias)  # (the first call: numpy's path, then the passes)
                got = op.compute(data, scale, bias)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            for result in (first, got):
                assert np.array_equal(_bits(result), _bits(expected)), (shape, groups, edges)
            assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip((data, scale, bias), before))
    assert group_normalization.KERNELS in __import__("sys").modules


def test_a_size_zero_tensor_keeps_the_numpy_path(monkeypatch):
    monkeypatch.setattr(accel, "LOAD_ELEMENTS", 0)
    op = _op(2, 1e-5)
    data = np.ones((0, 4, 3), np.float32)
    scale = np.ones(4, np.float32)
    with accel.use("auto"):
        for _ in range(2):
            assert op.compute(data, scale, scale).shape == (0, 4, 3)
