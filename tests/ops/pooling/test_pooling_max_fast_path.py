"""The values-only MaxPool kernel (MaxPool-1, and -8/-14 when nothing reads the indices) against
the kernel that also tracks indices: the same bits on NaN, signed zeros, infinities, integer
extremes and windows in padding; and the interpreter leaves the indices out only when no one
reads them."""

import itertools

import ml_dtypes
import numpy as np
import pytest

from irscatter import api
from irscatter.ops.pooling.core import Axis
from irscatter.ops.pooling.max_pool import max_pool, max_pool_values

EDGES = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 3.5]


def _axes(size, kernel, stride, dilation, begin, end):
    span = (kernel - 1) * dilation + 1
    out = (size + begin + end - span) // stride + 1
    return Axis(size, kernel, stride, dilation, begin, end, out)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.uint8,
                                   np.int32, np.int64])
@pytest.mark.parametrize("geometry", [(2, 2, 1, 0, 0), (3, 1, 1, 1, 1), (3, 2, 2, 2, 2), (2, 3, 1, 1, 0),
                                      (1, 1, 1, 0, 0), (1, 2, 1, 0, 0)])
def test_values_only_kernel_matches_the_indexed_kernel(dtype, geometry):
    rng = np.random.default_rng(7)
    shape = (2, 3, 7, 6)
    if dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        data = rng.choice(np.array(EDGES, np.float64), size=shape).astype(dtype)
        data[0, 0] = np.nan  # a channel of NaN only: every window is -inf
    else:
        info = np.iinfo(dtype)
        data = rng.choice(np.array([info.min, info.max, 0, 1, -1 if info.min else 2]), size=shape).astype(dtype)
    axes = [_axes(7, *geometry), _axes(6, *geometry)]
    expected = max_pool(data, axes)[0]
    got = max_pool_values(data, axes)
    assert got.dtype == expected.dtype
    assert np.array_equal(got.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("kernels", [(1, 3), (3, 1), (1, 1, 2), (2, 3, 1)])
def test_windows_of_one_tap_along_some_axes_match_and_never_write_the_input(kernels):
    # The separable kernel takes the maxima one axis at a time; an axis of one tap is a view.
    rng = np.random.default_rng(11)
    shape = (2, 2) + (5,) * len(kernels)
    data = rng.choice(np.array(EDGES, np.float32), size=shape)
    before = data.copy()
    axes = [_axes(5, k, 1, 1, 0, 0) for k in kernels]
    expected = max_pool(data, axes)[0]
    got = max_pool_values(data, axes)
    assert np.array_equal(got.view(np.uint8), expected.view(np.uint8))
    assert not np.shares_memory(got, data)
    assert np.array_equal(data.view(np.uint8), before.view(np.uint8))


def test_signed_zeros_keep_the_first_in_tap_order():
    for a, b in itertools.product([-0.0, 0.0], repeat=2):
        data = np.array([a, b], np.float32).reshape(1, 1, 2)
        got = max_pool_values(data, [_axes(2, 2, 1, 1, 0, 0)])
        assert np.signbit(got).item() == np.signbit(np.float32(a))


MAX_POOL_14 = """<?xml version="1.0"?>
<net name="pool" version="11"><layers>
<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,2,4,4" element_type="f32"/>
<output><port id="0" precision="FP32"><dim>1</dim><dim>2</dim><dim>4</dim><dim>4</dim></port></output></layer>
<layer id="1" name="pool" type="MaxPool" version="opset14"><data strides="2,2" dilations="1,1" pads_begin="0,0"
 pads_end="0,0" kernel="2,2" rounding_type="floor" auto_pad="explicit" index_element_type="i64" axis="0"/>
<input><port id="0"><dim>1</dim><dim>2</dim><dim>4</dim><dim>4</dim></port></input>
<output><port id="1" precision="FP32"><dim>1</dim><dim>2</dim><dim>2</dim><dim>2</dim></port>
<port id="2" precision="I64"><dim>1</dim><dim>2</dim><dim>2</dim><dim>2</dim></port></output></layer>
<layer id="2" name="out" type="Result" version="opset1"><input><port id="0"><dim>1</dim><dim>2</dim><dim>2</dim><dim>2</dim></port></input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
<edge from-layer="1" from-port="1" to-layer="2" to-port="0"/></edges></net>
"""


def test_unread_indices_are_left_out_but_a_record_of_values_has_them():
    model = api.parse_model(MAX_POOL_14)
    (step,) = [s for s in api.compile_model(model).plan.steps if s.layer.type == "MaxPool"]
    assert step.unused == {1}
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    plain = model.run({"x": x})
    assert np.array_equal(plain["out"], x[:, :, 1::2, 1::2])
    recorded = model.run({"x": x}, intermediate=True)
    indices = recorded["pool:2"]
    assert indices.dtype == np.int64
    assert np.array_equal(indices.reshape(-1), [5, 7, 13, 15, 21, 23, 29, 31])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int64])
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (1, 5, 7, 6), (3, 1, 7, 6), (1, 1, 7, 6)])
def test_parts_of_channels_or_samples_match_one_call(dtype, shape, monkeypatch):
    # Forced on this small a layer: a part per core over the first leading axis longer than one
    # (none for one sample of one channel).
    from irscatter.ops.common import threads
    from irscatter.ops.pooling import max_pool as module

    rng = np.random.default_rng(3)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        data = rng.choice(np.array([info.min, info.max, 0, 1, -1]), size=shape).astype(dtype)
    else:
        data = rng.choice(np.array(EDGES, np.float64), size=shape).astype(dtype)
    spatial = shape[-2:]
    axes = [_axes(spatial[0], 3, 2, 1, 1, 1), _axes(spatial[1], 2, 1, 1, 0, 1)]
    expected = max_pool(data, axes)[0]
    monkeypatch.setattr(threads, "_policy", "split")
    monkeypatch.setattr(threads, "CORES", max(threads.CORES, 2))
    monkeypatch.setattr(module, "TAP_WORK", threads.SPLIT_WORK)
    calls = []
    monkeypatch.setattr(threads, "run", lambda tasks, run=threads.run: calls.append(len(tasks)) or run(tasks))
    got = max_pool_values(data, axes)
    assert got.shape == expected.shape and np.array_equal(got.view(np.uint8), expected.view(np.uint8))
    cut = next((extent for extent in shape[:2] if extent > 1), None)
    assert calls == ([] if cut is None else [min(threads.CORES, cut)])
