"""Unique-10 against OpenVINO's CPU plugin and the oracle (the reference's algorithm, literally).

Flattened and along every axis (negative too, axis given as a scalar or a [1] tensor of i32 or
i64), sorted and not, both index and count types, ranks 0 to 4 with size-0 dimensions, every
numeric type and booleans, data drawn from few values so that repeats are common. Exact.

NaN: with `sorted` false OpenVINO's CPU plugin agrees (every NaN unique on its own); with
`sorted` true its order is not defined, so those cases are held to the oracle alone. Empty
data: the CPU plugin fails, the oracle judges.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import sorting as oracle

TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
         np.uint16, np.uint32, np.uint64, np.bool_]


def _types(index_type, count_type):
    return {"index_type": np.dtype(index_type), "count_type": np.dtype(count_type)}


def _case(cid, data, axis=None, *, sorted_=True, index="i64", count="i64", axis_type=np.int64, axis_shape=(), **kw):
    inputs = [Input("data", data)]
    if axis is not None:
        inputs.append(Input("axis", np.array(axis, axis_type).reshape(axis_shape), const=True))
    attrs = {"sorted": sorted_, "index_element_type": index, "count_element_type": count}

    def run(d, a=None):
        return oracle.unique(d, a, sorted_=sorted_, index_type=np.int32 if index == "i32" else np.int64,
                             count_type=np.int32 if count == "i32" else np.int64)
    return Case(cid, "Unique", "opset10", inputs, attrs, oracle=run, **kw)


def _data(rng, shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return harness.values(rng, shape, dtype)
    if np.dtype(dtype).kind in "iu":
        return harness.values(rng, shape, dtype, low=0, high=3)
    data = harness.values(rng, shape, np.float32, low=-2, high=2).round()  # few distinct values
    return np.where(data == 0, -0.0, data).astype(dtype) if rng.random() < 0.3 else data.astype(dtype)


def _cases():
    rng = np.random.default_rng(10)
    out = []
    n = 0
    for shape in harness.shapes(rng, ranks=(0, 1, 2, 3, 4), max_dim=4):
        for sorted_ in (True, False):
            for axis in [None, *range(-len(shape), len(shape))]:
                dtype = TYPES[n % len(TYPES)]
                n += 1
                data = _data(rng, shape, dtype)
                kw = {}
                if data.size == 0 or (axis is not None and shape[axis] == 0):
                    kw = dict(openvino="none", why="OpenVINO's CPU plugin fails on empty data")
                elif axis is not None and 0 in shape:
                    kw = dict(openvino="none", why="OpenVINO's CPU plugin fails on empty slices")
                elif axis is not None and np.dtype(dtype) in (np.int8, np.uint8) and data.ndim > 1:
                    kw = dict(openvino="none", why="OpenVINO's CPU plugin gives wrong indices and counts for 8-bit "
                              "slices (e.g. counts 22015, 1852793695), and its core reference has no 8-bit Unique")
                out.append(_case(f"unique-{np.dtype(dtype).name}-{'x'.join(map(str, shape)) or 'scalar'}"
                                 f"-{'flat' if axis is None else f'a{axis}'}-{'sorted' if sorted_ else 'unsorted'}",
                                 data, axis, sorted_=sorted_, index=("i32", "i64")[n % 2],
                                 count=("i32", "i64")[(n // 2) % 2], axis_type=(np.int32, np.int64)[n % 2],
                                 axis_shape=((), (1,))[(n // 3) % 2], **kw))
    # the reference's own documentation example and a 2-D slice example
    example = np.array([[1, 2, 3], [1, 2, 3], [4, 5, 6]], np.float32)
    for sorted_ in (True, False):
        for axis in (None, 0, 1):
            out.append(_case(f"unique-rows-{axis}-{sorted_}", example, axis, sorted_=sorted_, index="i32"))
    # NaN and signed zeros
    nan = np.array([2, np.nan, 1, np.nan, 2, -0.0, 0.0, np.inf], np.float32)
    nan_rows = np.array([[1, np.nan], [1, np.nan], [0, 5], [1, 2], [0, 5]], np.float32)
    for sorted_ in (True, False):
        kw = {} if not sorted_ else dict(openvino="none", why="OpenVINO's sorted order is not defined with NaN")
        out.append(_case(f"unique-nan-{sorted_}", nan, sorted_=sorted_, **kw))
        out.append(_case(f"unique-nan-rows-{sorted_}", nan_rows, 0, sorted_=sorted_, **kw))
    return out


def _errors():
    f = np.zeros((2, 3), np.float32)

    def err(cid, inputs, label, **attrs):
        return Case(cid, "Unique", "opset10", inputs, attrs, error=label)

    return [
        err("unique-err-axis-range", [Input("data", f), Input("axis", np.array(2, np.int64), const=True)], "axis-range"),
        err("unique-err-axis-scalar-data", [Input("data", np.array(1.0, np.float32)),
                                            Input("axis", np.array(0, np.int64), const=True)], "axis-range"),
        err("unique-err-axis-type", [Input("data", f), Input("axis", np.array(0, np.int8), const=True)], "axis-type"),
        err("unique-err-axis-float", [Input("data", f), Input("axis", np.array(0, np.float32), const=True)],
            "axis-type"),
        err("unique-err-axis-shape", [Input("data", f), Input("axis", np.array([0, 1], np.int64), const=True)],
            "axis-shape"),
        err("unique-err-string", [Input("data", np.array(["a", "b"], object))], "unique-type"),
        err("unique-err-index-type", [Input("data", f)], "attributes", index_element_type="f32"),
    ]


CASES = _cases()
ERRORS = _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_unique(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_unique_refused(case):
    harness.check(case, ERRORS)
