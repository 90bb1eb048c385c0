"""The compiled passes of GroupNormalization and MVN (`norm_kernels.py`, numba) give the numpy
path's bits: ranks 2 to 5 (GroupNormalization: one group to one per channel; MVN: trailing axes,
both epsilon modes), every float type, edge values (NaN, infinities, -0.0, huge and subnormal
values), on one thread and split into parts; a layer's first call takes the numpy path, its
later ones the compiled passes; the inputs are not written."""

import sys

import numpy as np
import pytest
from helpers import element_dtypes, numpy_then_compiled

from irscatter.ir.graph import Layer, Port
from irscatter.ops.common import accel
from irscatter.ops.normalization import group_normalization
from irscatter.ops.normalization.group_normalization import GroupNormalization
from irscatter.ops.normalization.mvn import MVN, MVN6

FLOATS = element_dtypes("f32", "f64", "f16", "bf16")
EDGES = [np.nan, np.inf, -np.inf, -0.0, 0.0, 3e38, -3e38, 1e-40, 1.0]

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


def _op(groups: int, epsilon: float) -> GroupNormalization:
    return GroupNormalization(Layer(id=0, name="gn", type="GroupNormalization", version="opset12",
                                    attrs={"num_groups": str(groups), "epsilon": str(epsilon)},
                                    inputs=[Port(id=i) for i in range(3)], outputs=[Port(id=3)]))


def _data(rng, shape, dtype, edges):
    data = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    if edges:
        flat = data.reshape(-1)
        with np.errstate(over="ignore"):
            flat[:len(EDGES)] = np.array(EDGES[:flat.size], np.float64).astype(dtype)
    return data


@pytest.mark.parametrize("dtype", list(FLOATS.values()), ids=list(FLOATS))
def test_group_normalization_keeps_the_numpy_bits(compiled_split, dtype):
    rng = np.random.default_rng(2)
    cases = [((3, 4), 2), ((2, 6, 5), 3), ((1, 8, 7, 9), 1), ((2, 4, 3, 2, 5), 4), ((1, 12, 300), 12),
             ((5, 6, 4, 4), 6), ((1, 3, 1), 1)]
    for k, (shape, groups) in enumerate(cases):
        for edges in (False, True):
            data = _data(rng, shape, dtype, edges)
            scale = _data(rng, shape[1:2], dtype, False)
            bias = _data(rng, shape[1:2], dtype, False)
            numpy_then_compiled(_op(groups, [1e-5, 0.0, 0.5][k % 3]), data, scale, bias)
    assert group_normalization.KERNELS in sys.modules


@pytest.mark.parametrize("dtype", list(FLOATS.values()), ids=list(FLOATS))
def test_mvn_keeps_the_numpy_bits(compiled_split, monkeypatch, dtype):
    """Trailing axes (a LayerNorm's last axis, an instance norm's spatial axes, all but the
    batch), both epsilon modes and MVN-2's attributes; other axes and normalize_variance false
    stay on numpy's path, with the same results."""
    from irscatter.ops.normalization import norm_kernels

    passes = []
    standardized = norm_kernels.standardized
    monkeypatch.setattr(norm_kernels, "standardized", lambda *a: passes.append(a[0].shape) or standardized(*a))
    rng = np.random.default_rng(3)
    cases = [((4, 7), (1,)), ((2, 197, 384), (2,)), ((2, 3, 5, 6), (2, 3)), ((2, 3, 4, 2, 3), (1, 2, 3, 4)),
             ((3, 8), (0, 1)), ((2, 5, 6), (1,)), ((1, 1), (1,))]
    for k, (shape, axes) in enumerate(cases):
        data = _data(rng, shape, dtype, k % 2 == 0)
        for mode, variance in (("inside_sqrt", True), ("outside_sqrt", True), ("inside_sqrt", False)):
            layer = Layer(id=1, name="mvn", type="MVN", version="opset6", inputs=[Port(id=0), Port(id=1)],
                          outputs=[Port(id=2)], attrs={"normalize_variance": str(variance).lower(),
                                                       "eps": str([1e-5, 1e-9, 0.25][k % 3]), "eps_mode": mode})
            numpy_then_compiled(MVN6(layer), data, np.array(axes, np.int64))
        layer = Layer(id=2, name="mvn2", type="MVN", version="opset2", inputs=[Port(id=0)], outputs=[Port(id=1)],
                      attrs={"reduction_axes": ",".join(map(str, axes)), "normalize_variance": "true",
                             "eps": "1e-6"})
        numpy_then_compiled(MVN(layer), data)
    assert len(passes) >= 2 * 6  # (each trailing case's MVN-6 and MVN-2, at least, took the passes)
    taken = len(passes)
    transposed = _data(rng, (5, 6, 4), dtype, True).transpose(0, 2, 1)  # (`test_mvn_across_channels...`)
    numpy_then_compiled(MVN(Layer(id=3, name="t", type="MVN", version="opset2", inputs=[Port(id=0)], outputs=[Port(id=1)],
                     attrs={"reduction_axes": "2", "normalize_variance": "true", "eps": "1e-6"})), transposed)
    assert len(passes) == taken


def _strides_of_extents(a: np.ndarray) -> tuple[int, ...]:
    """`a`'s strides along its axes longer than one (a size-1 axis's stride addresses nothing)."""
    return tuple(stride for stride, extent in zip(a.strides, a.shape) if extent > 1)


@pytest.mark.parametrize("dtype", list(FLOATS.values()), ids=list(FLOATS))
def test_mvn_across_channels_of_a_channels_first_map_keeps_the_numpy_bits(compiled_split, monkeypatch, dtype):
    """A channels-last view of a channels-first map normalized over its last axis (ConvNeXt's
    LayerNorm between Transposes) takes `standardized_across`, which sums channel after channel
    as numpy's reductions of that view do: the same bits, laid out as numpy lays them out, for
    ranks 3 to 5, one sample and several, one position row and many, edge values, both epsilon
    modes; other views stay on numpy's path."""
    from irscatter.ops.normalization import norm_kernels

    calls = []
    across = norm_kernels.standardized_across
    monkeypatch.setattr(norm_kernels, "standardized_across", lambda *a: calls.append(a[0].shape) or across(*a))
    rng = np.random.default_rng(5)
    shapes = [(1, 96, 7, 9), (2, 5, 3), (3, 7, 1, 4), (2, 9, 4, 3, 2), (1, 300, 2, 2), (1, 2, 40)]
    for k, shape in enumerate(shapes):
        data = np.moveaxis(_data(rng, shape, dtype, k % 2 == 0), 1, -1)
        axes = np.array([data.ndim - 1], np.int64)
        for mode in ("inside_sqrt", "outside_sqrt"):
            layer = Layer(id=1, name="mvn", type="MVN", version="opset6", inputs=[Port(id=0), Port(id=1)],
                          outputs=[Port(id=2)], attrs={"normalize_variance": "true", "eps_mode": mode,
                                                       "eps": str([1e-5, 1e-9, 0.25][k % 3])})
            numpy_then_compiled(MVN6(layer), data, axes)
            with accel.use("numpy"):
                expected = MVN6(layer).compute(data, axes)
            with accel.use("auto"):
                got = layer_twice(MVN6(layer), data, axes)
            assert _strides_of_extents(got) == _strides_of_extents(expected)
    assert len(set(calls)) == len(shapes)  # (every case took the loop: its [samples, channels, positions])
    done = len(calls)
    others = [np.moveaxis(_data(rng, (2, 6, 4, 3), dtype, True), 1, 2),  # channels elsewhere
              np.moveaxis(_data(rng, (2, 6, 4), dtype, True), 0, -1)]  # the samples' axis last
    for data in others:
        numpy_then_compiled(MVN(Layer(id=3, name="t", type="MVN", version="opset2", inputs=[Port(id=0)], outputs=[Port(id=1)],
                         attrs={"reduction_axes": str(data.ndim - 1), "normalize_variance": "true",
                                "eps": "1e-6"})), data)
    assert len(calls) == done


def layer_twice(op, *inputs):
    """The layer's second call (its first takes numpy's path)."""
    op.compute(*inputs)
    return op.compute(*inputs)


def test_a_size_zero_tensor_keeps_the_numpy_path(monkeypatch):
    monkeypatch.setattr(accel, "LOAD_ELEMENTS", 0)
    op = _op(2, 1e-5)
    data = np.ones((0, 4, 3), np.float32)
    scale = np.ones(4, np.float32)
    with accel.use("auto"):
        for _ in range(2):
            assert op.compute(data, scale, scale).shape == (0, 4, 3)
