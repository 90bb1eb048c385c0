"""AvgPool-1, AvgPool-14 and AvgPool-16 against OpenVINO's CPU plugin and `oracles.pooling.avg_pool`.

Tolerance: 1 ulp of the output type against the oracle (which sums exactly and rounds once);
irscatter sums in f32 (f64 for f64) and rounds once, and the finite test values are multiples
of 1/16 so that those sums are exact too: what remains is the division and, for f16 and bf16,
the second rounding. Integers are exact (the mean rounded half to even). Random windows over 1,
2 and 3 spatial axes with every rounding type, auto_pad, exclude-pad value and (-16) dilation.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.pooling import avg_pool, pool_geometry

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i32", "u8", "i8")
ROUNDINGS = {1: ("floor", "ceil"), 14: ("floor", "ceil", "ceil_torch"), 16: ("floor", "ceil", "ceil_torch")}
AUTO_PADS = ("explicit", "same_upper", "same_lower", "valid")


def _values(rng, shape, dtype, edges):
    data = harness.values(rng, shape, dtype, edges=edges and np.dtype(dtype).kind not in "iu", low=-8, high=8)
    if np.dtype(dtype).kind in "iu":
        return data
    wide = data.astype(np.float64)
    finite = np.isfinite(wide) & (np.abs(wide) > 1e-30)  # keeps the denormal edge as it is
    return np.where(finite, np.round(wide * 16) / 16, wide).astype(dtype)


def _draw(rng, version, spatial_rank):
    while True:
        kernel = [int(k) for k in rng.integers(1, 4, spatial_rank)]
        strides = [int(s) for s in rng.integers(1, 4, spatial_rank)]
        dilations = [int(d) for d in rng.integers(1, 3, spatial_rank)] if version == 16 else [1] * spatial_rank
        pads_begin = [int(p) for p in rng.integers(0, 3, spatial_rank)]
        pads_end = [int(p) for p in rng.integers(0, 3, spatial_rank)]
        rounding = str(rng.choice(ROUNDINGS[version]))
        auto_pad = str(rng.choice(AUTO_PADS))
        exclude = bool(rng.integers(0, 2))
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + tuple(int(d) for d in rng.integers(1, 7, spatial_rank))
        spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
        geometry = pool_geometry(shape[2:], kernel, strides, dilations, pads_begin, pads_end, auto_pad, rounding)
        fits = all(span <= size + b + e for span, size, (b, e, _) in zip(spans, shape[2:], geometry))
        no_empty = not exclude or all(span > b and span > e for span, (b, e, _) in zip(spans, geometry))
        if fits and no_empty:
            return shape, {"strides": strides, "pads_begin": pads_begin, "pads_end": pads_end, "kernel": kernel,
                           "rounding_type": rounding, "auto_pad": auto_pad, "exclude-pad": exclude}, dilations


def _case(name, version, data, attrs, dilations, **judge):
    attrs = dict(attrs)
    args = dict(kernel=attrs["kernel"], strides=attrs["strides"], exclude_pad=attrs["exclude-pad"],
                pads_begin=attrs["pads_begin"], pads_end=attrs["pads_end"], dilations=dilations,
                rounding=attrs.get("rounding_type", "floor"), auto_pad=attrs.get("auto_pad", "explicit"))
    empty = avg_pool(np.ones(data.shape, np.float32), **args) == 0  # (or padding only, counted: also 0)
    if empty.any() and judge.get("openvino") != "none":
        judge = {**judge, "openvino": "none",
                 "why": "a window without data elements: the CPU plugin answers NaN (0/0), the reference 0"}
    if version == 16:
        attrs["dilations"] = dilations  # the CPU plugin crashes on an AvgPool-16 without the attribute
    return Case(name, "AvgPool", f"opset{version}", [Input("data", data)], attrs,
                oracle=lambda x: avg_pool(x, **args), ulps=0 if data.dtype.kind in "iu" else 1, **judge)


def _cases():
    rng = np.random.default_rng(16)
    cases = []
    for version in (1, 14, 16):
        for tag, dtype in TYPES.items():
            for k in range(5 if tag in ("f32", "f16") else 3):
                shape, attrs, dilations = _draw(rng, version, 1 + k % 3)
                data = _values(rng, shape, dtype, edges=k % 2 == 0)
                judge = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"} if tag == "f64" else {}
                cases.append(_case(f"avgpool{version}-{tag}-{k}-{'x'.join(map(str, shape))}-{attrs['auto_pad']}-"
                                   f"{attrs['rounding_type']}-ex{int(attrs['exclude-pad'])}", version, data, attrs,
                                   dilations, **judge))
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    pads = dict(strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1], kernel=[2, 2])
    for version in (1, 14, 16):
        for exclude in (True, False):
            # ceil rounding: a last window reaching past the end padding
            cases.append(_case(f"avgpool{version}-ceil-overhang-ex{int(exclude)}", version, x,
                               {**pads, "pads_end": [0, 0], "rounding_type": "ceil", "exclude-pad": exclude}, [1, 1]))
            cases.append(_case(f"avgpool{version}-ceil-pads-ex{int(exclude)}", version, x,
                               {**pads, "strides": [3, 3], "rounding_type": "ceil", "exclude-pad": exclude}, [1, 1]))
    # ceil rounding without pads: the last window starts past the data and has nothing to count
    line = np.array([[[1, 2, 4]]], np.float32)
    for exclude in (True, False):
        cases.append(_case(f"avgpool1-valid-ceil-beyond-ex{int(exclude)}", 1, line,
                           {"strides": [3], "pads_begin": [0], "pads_end": [0], "kernel": [1], "auto_pad": "valid",
                            "rounding_type": "ceil", "exclude-pad": exclude}, [1]))
    cases.append(_case("avgpool14-ceil-torch", 14, x, {**pads, "rounding_type": "ceil_torch", "exclude-pad": False},
                       [1, 1]))
    # integer means round half to even: 0.5 -> 0, 1.5 -> 2, -0.5 -> 0, -1.5 -> -2, -2.5 -> -2
    ints = np.array([[[0, 1, 1, 2, 0, -1, -1, -2, -2, -3, 7, 8]]], np.int32)
    cases.append(_case("avgpool1-int-ties", 1, ints, {"strides": [2], "pads_begin": [0], "pads_end": [0],
                                                      "kernel": [2], "exclude-pad": True}, [1]))
    big = np.array([[[2**62, 2**62 + 1, -2**63, 2**63 - 1, 5, 6]]], np.int64)
    cases.append(_case("avgpool14-i64-exact", 14, big, {"strides": [2], "pads_begin": [0], "pads_end": [0],
                                                        "kernel": [2], "exclude-pad": True}, [1],
                       openvino="none", why="the CPU plugin computes i64 in f32"))
    large = np.array([[[2**64 - 1, 2**64 - 2, 2**63, 2**63 + 1, 0, 1]]], np.uint64)
    cases.append(_case("avgpool16-u64-exact", 16, large, {"strides": [2], "pads_begin": [0], "pads_end": [1],
                                                          "kernel": [2], "exclude-pad": False}, [1],
                       openvino="none", why="the CPU plugin computes u64 in f32"))
    cases.append(Case("avgpool16-no-dilations", "AvgPool", "opset16", [Input("data", x)],
                      {**pads, "exclude-pad": True}, oracle=lambda a: avg_pool(a, [2, 2], [2, 2], True, [1, 1], [1, 1]),
                      ulps=1, openvino="none", why="the CPU plugin crashes on an AvgPool-16 without dilations"))
    cases.append(_case("avgpool1-empty-axis", 1, np.zeros((1, 2, 0), np.float32),
                       {"strides": [1], "pads_begin": [1], "pads_end": [1], "kernel": [2], "exclude-pad": False},
                       [1], openvino="none", why="the CPU plugin does not take a zero-sized input"))
    ok = {"strides": [1], "pads_begin": [0], "pads_end": [0], "kernel": [2], "exclude-pad": True}
    one = np.zeros((1, 1, 4), np.float32)
    refusals = [
        ("rank", 1, np.zeros((1, 1, 1, 1, 1, 4), np.float32), ok, "data-rank"),
        ("kernel-size", 14, one, {**ok, "kernel": [2, 2]}, "pool-attribute-size"),
        ("dilations-size", 16, one, {**ok, "dilations": [1, 1]}, "pool-attribute-size"),
        ("kernel-zero", 16, one, {**ok, "kernel": [0]}, "pool-attribute-value"),
        ("window", 1, one, {**ok, "kernel": [5]}, "pool-window-size"),
        ("batch-zero", 14, np.zeros((0, 1, 4), np.float32), ok, "pool-empty-batch"),
        ("pad-window", 1, one, {**ok, "pads_begin": [2]}, "pool-pad-window"),
        ("pad-window-dilated", 16, one, {**ok, "pads_end": [3], "dilations": [2]}, "pool-pad-window"),
        ("boolean", 1, one > 0, ok, "numeric-type"),
        ("exclude-pad-missing", 1, one, {k: v for k, v in ok.items() if k != "exclude-pad"}, "attributes"),
        ("ceil-torch-v1", 1, one, {**ok, "rounding_type": "ceil_torch"}, "attributes"),
    ]
    for name, version, data, attrs, label in refusals:
        cases.append(Case(f"avgpool{version}-refuses-{name}", "AvgPool", f"opset{version}", [Input("data", data)],
                          attrs, error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_avg_pool(case):
    harness.check(case, CASES)
