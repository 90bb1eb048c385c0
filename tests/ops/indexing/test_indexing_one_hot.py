"""OneHot-1 and OneHot-16 against OpenVINO's CPU plugin and the oracle: every axis (negative
too) of indices of ranks 0 to 4 with size-0 dimensions, i32 and i64 indices and depth, on and
off values of float, integer and boolean types, indices past depth and negative ones (off_value
in OneHot-1 and ignore_negative; wrapped once by normalize). Exact.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, named_inputs
from oracles import sorting as oracle

VALUE_TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int32, np.int64, np.uint8, np.bool_]


def _case(cid, version, indices, depth, on, off, *, axis, mode=None, depth_const=True, **kw):
    attrs = {"axis": axis}
    if mode is not None:
        attrs["negative_indices_mode"] = mode
    return Case(cid, "OneHot", f"opset{version}",
                [Input("indices", indices), Input("depth", depth, const=depth_const),
                 Input("on_value", on, const=True), Input("off_value", off, const=True)], attrs,
                oracle=lambda i, d, a, b: oracle.one_hot(i, d, a, b, axis=axis, normalize=mode == "normalize"), **kw)


def _cases():
    rng = np.random.default_rng(16)
    out = []
    n = 0
    for shape in harness.shapes(rng, ranks=(0, 1, 2, 3, 4), max_dim=4):
        for axis in range(-len(shape) - 1, len(shape) + 1):
            for version, mode in ((1, None), (16, "ignore_negative"), (16, "normalize"), (16, None)):
                n += 1
                itype = (np.int32, np.int64)[n % 2]
                depth = int(rng.integers(1, 6))
                indices = rng.integers(-depth - 2, depth + 2, shape).astype(itype)
                vtype = VALUE_TYPES[n % len(VALUE_TYPES)]
                on, off = np.array(1 if vtype == np.bool_ else 3.5, vtype), np.array(0 if vtype in (np.bool_, np.uint8) else -2,
                                                                                    vtype)
                out.append(_case(f"onehot{version}-{mode}-{'x'.join(map(str, shape)) or 'scalar'}-a{axis}-d{depth}-"
                                 f"{np.dtype(vtype).name}", version, indices, np.array(depth, (np.int64, np.int32)[n % 3 == 0]),
                                 on, off, axis=axis, mode=mode, depth_const=n % 4 != 0 or not shape))
    # the spec pages' examples
    out.append(_case("onehot1-spec-1", 1, np.array([0, 3, 1, 2], np.int64), np.array(3, np.int64),
                     np.array(1, np.int32), np.array(2, np.int32), axis=-1))
    out.append(_case("onehot16-spec-normalize", 16, np.array([0, -5, -2, 2], np.int64), np.array(3, np.int64),
                     np.array(1, np.int32), np.array(2, np.int32), axis=-1, mode="normalize"))
    out.append(_case("onehot16-extremes", 16, np.array([-2**31, 2**31 - 1, -1, 0], np.int32), np.array(4, np.int32),
                     np.array(1, np.float32), np.array(0, np.float32), axis=0, mode="normalize"))
    return out


def _errors():
    i = np.array([0, 1], np.int64)

    def err(cid, version, values, label, **attrs):
        names = ("indices", "depth", "on_value", "off_value")
        return Case(cid, "OneHot", f"opset{version}", named_inputs(names, values, const=True),
                    {"axis": -1, **attrs}, error=label)
    one, zero = np.array(1.0, np.float32), np.array(0.0, np.float32)
    return [
        err("onehot1-err-indices-type", 1, [i.astype(np.float32), np.array(3), one, zero], "index-type"),
        err("onehot1-err-indices-u8", 1, [i.astype(np.uint8), np.array(3), one, zero], "index-type"),
        err("onehot1-err-depth-type", 1, [i, np.array(3.0, np.float32), one, zero], "one-hot-depth-type"),
        err("onehot1-err-depth-shape", 1, [i, np.array([3]), one, zero], "one-hot-depth-shape"),
        err("onehot1-err-depth-zero", 1, [i, np.array(0), one, zero], "one-hot-depth"),
        err("onehot16-err-depth-negative", 16, [i, np.array(-2), one, zero], "one-hot-depth"),
        err("onehot1-err-on-shape", 1, [i, np.array(3), np.array([1.0], np.float32), zero], "scalar-input"),
        err("onehot1-err-types", 1, [i, np.array(3), one, np.array(0, np.int32)], "same-element-type"),
        err("onehot1-err-axis", 1, [i, np.array(3), one, zero], "axis-range", axis=2),
        err("onehot16-err-mode", 16, [i, np.array(3), one, zero], "attributes", negative_indices_mode="wrap"),
        err("onehot16-err-huge", 16, [i, np.array(2**40), one, zero], "tensor-limit"),
        Case("onehot16-err-huge-runtime", "OneHot", "opset16",
             [Input("indices", i), Input("depth", np.array(2**40)), Input("on_value", one, const=True),
              Input("off_value", zero, const=True)], {"axis": -1}, error="tensor-limit"),
    ]


CASES = _cases()
ERRORS = _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_one_hot(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_one_hot_refused(case):
    harness.check(case, ERRORS)
