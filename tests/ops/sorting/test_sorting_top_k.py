"""TopK-1, -3 and -11 against OpenVINO's CPU plugin and the per-slice oracle.

Every mode (max, min) and sort (value, index, none), both index types, TopK-11's stable, ranks
1 to 5 with a size-0 dimension, axes negative and positive, k from 0 to the axis size, from a
Const or a Parameter, and every numeric type. Exact: TopK moves values, it computes none.

Ties: integer data drawn from a handful of values and a fixed slice with repeated values check
the lower-index-first order. NaN: OpenVINO's order is not defined there (see TopK's doc), so
the NaN cases are held to the oracle alone. -0.0 and 0.0 are equal values, in index order.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import sorting as oracle

OPSETS = {1: "opset1", 3: "opset3", 11: "opset11"}
TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
         np.uint16, np.uint32, np.uint64]


def _oracle(axis, mode, sort, index_type):
    return lambda data, k: oracle.top_k(data, k, axis=axis, mode=mode, sort=sort,
                                        index_type=np.int32 if index_type == "i32" else np.int64)


def _case(cid, version, data, k, *, axis, mode, sort, index_type="i32", stable=None, k_const=True,
          k_type=np.int64, **kw):
    attrs = {"axis": axis, "mode": mode, "sort": sort, "index_element_type": index_type}
    if stable is not None:
        attrs["stable"] = stable
    return Case(cid, "TopK", OPSETS[version], [Input("data", data), Input("k", np.array(k, k_type), const=k_const)],
                attrs, oracle=_oracle(axis, mode, sort, index_type), **kw)


def _no_nan(values):
    if values.dtype.kind in "iub":
        return values
    return np.where(np.isnan(values.astype(np.float32)), np.float32(0.5), values.astype(np.float32)).astype(values.dtype)


def _cases():
    rng = np.random.default_rng(17)
    out = []
    shapes = [s for s in harness.shapes(rng, ranks=(1, 2, 3, 4, 5), max_dim=5)]
    settings = [(m, s) for m in ("max", "min") for s in ("value", "index", "none")]
    n = 0
    for version in (1, 3, 11):
        for shape in shapes:
            for mode, sort in settings:
                dtype = TYPES[n % len(TYPES)]
                n += 1
                axis = int(rng.integers(-len(shape), len(shape)))
                dim = shape[axis]
                k = int(rng.integers(1, dim + 1)) if dim else 0
                if np.dtype(dtype).kind in "iu":
                    data = harness.values(rng, shape, dtype, low=-3, high=3)  # many ties
                elif dtype == np.float64:  # values f32 holds, since the CPU plugin computes f64 in f32 (and
                    # turns infinities into f32's largest finite values on the way)
                    data = _no_nan(harness.values(rng, shape, np.float32, edges=True)).astype(np.float64)
                    data = np.where(np.isinf(data), np.sign(data) * 3.5, data)
                else:
                    data = _no_nan(harness.values(rng, shape, dtype, edges=True))
                kw = {}
                if version == 11:
                    kw["stable"] = bool(rng.integers(0, 2)) and sort != "none"
                k_type = [np.int8, np.int32, np.int64][n % 3] if version == 1 else \
                    [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64][n % 8]
                if n % 5 == 0 and dtype in (np.float32, np.int32, np.int64, np.uint32, np.uint64):  # k fed at run time
                    kw.update(k_const=False, openvino="reference", why="the CPU plugin's order of equal values is "
                              "not the lower index first when k is not a constant (the core "
                              "reference takes f32, i32, i64, u32, u64)")
                    if sort == "none":
                        kw.update(openvino="none", why="with sort none the core reference leaves std::nth_element's "
                                  "order, and the CPU plugin's order of equal values is not fixed with k fed at run time")
                out.append(_case(f"topk{version}-{mode}-{sort}-{np.dtype(dtype).name}-{'x'.join(map(str, shape))}"
                                 f"-a{axis}-k{k}", version, data, k, axis=axis, mode=mode, sort=sort,
                                 index_type="i64" if n % 2 else "i32", k_type=k_type, **kw))
    # ties, the spec's own example: lower index first, under every setting
    tied = np.array([5, 3, 1, 2, 5, 5], np.float32)
    for version in (1, 3, 11):
        for mode, sort in settings:
            for k in (1, 4, 6):
                out.append(_case(f"topk{version}-ties-{mode}-{sort}-k{k}", version, tied, k, axis=0, mode=mode,
                                 sort=sort, stable=True if version == 11 and sort != "none" else None))
    # k = 0: an empty axis; a whole axis; integer extremes; -0.0 and 0.0 tied
    out.append(_case("topk3-k0", 3, np.arange(6, dtype=np.float32).reshape(2, 3), 0, axis=1, mode="max",
                     sort="value", openvino="none", why="the CPU plugin refuses k = 0; the core reference "
                     "returns the whole axis (see TopK's doc)"))
    extremes = np.array([[0, -2**31, 2**31 - 1, 7, -2**31]], np.int32)
    for mode in ("max", "min"):
        out.append(_case(f"topk11-extremes-{mode}", 11, extremes, 3, axis=1, mode=mode, sort="value"))
    infinite = np.array([[1.0, -np.inf, np.inf, -np.inf, 0.0, np.inf]], np.float64)
    for mode in ("max", "min"):
        out.append(_case(f"topk11-f64-infinities-{mode}", 11, infinite, 4, axis=1, mode=mode, sort="value",
                         openvino="none", why="the CPU plugin turns f64 infinities into f32's largest values, "
                         "and the core reference has no f64 TopK"))
    zeros = np.array([0.0, -0.0, 1.0, -0.0, 0.0], np.float32)
    for mode in ("max", "min"):
        out.append(_case(f"topk11-signed-zeros-{mode}", 11, zeros, 4, axis=0, mode=mode, sort="value", stable=True))
    # NaN: greater than every number, in index order (irscatter's choice)
    nan = np.array([1, np.nan, 3, -np.inf, np.nan, np.inf, 0, -0.0, 2], np.float32)
    for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
        for mode in ("max", "min"):
            for sort in ("value", "index"):
                for k in (2, 9):
                    out.append(_case(f"topk11-nan-{np.dtype(dtype).name}-{mode}-{sort}-k{k}", 11, nan.astype(dtype),
                                     k, axis=0, mode=mode, sort=sort, openvino="none",
                                     why="OpenVINO's order is not defined with NaN (its comparator is no ordering)"))
    return out


def _errors():
    f = np.zeros((2, 3), np.float32)

    def err(cid, version, data, k, label, **attrs):
        attrs = {"axis": 1, "mode": "max", "sort": "value", **attrs}
        return Case(cid, "TopK", OPSETS[version], [Input("data", data), Input("k", k, const=True)], attrs, error=label)

    return [
        err("topk1-err-scalar", 1, np.array(1.0, np.float32), np.array(1, np.int64), "top-k-rank", axis=0),
        err("topk1-err-k-type", 1, f, np.array(1, np.uint8), "top-k-k-type"),
        err("topk3-err-k-float", 3, f, np.array(1, np.float32), "top-k-k-type"),
        err("topk3-err-k-shape", 3, f, np.array([1], np.int64), "top-k-k-shape"),
        err("topk3-err-k-large", 3, f, np.array(4, np.int64), "top-k-k-range"),
        err("topk3-err-k-negative", 3, f, np.array(-1, np.int64), "top-k-k-range"),
        err("topk3-err-axis", 3, f, np.array(1, np.int64), "axis-range", axis=2),
        err("topk3-err-bool", 3, np.zeros((2, 3), bool), np.array(1, np.int64), "numeric-type"),
        err("topk11-err-stable-none", 11, f, np.array(1, np.int64), "top-k-stable", sort="none", stable=True),
        err("topk11-err-mode", 11, f, np.array(1, np.int64), "attributes", mode="largest"),
        err("topk11-err-index-type", 11, f, np.array(1, np.int64), "attributes", index_element_type="u8"),
        Case("topk3-err-k-large-runtime", "TopK", "opset3", [Input("data", f), Input("k", np.array(5, np.int64))],
             {"axis": 1, "mode": "max", "sort": "value"}, error="top-k-k-range"),
    ]


CASES = _cases()
ERRORS = _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_top_k(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_top_k_refused(case):
    harness.check(case, ERRORS)
