"""Col2Im-15 against OpenVINO's CPU plugin and `oracles.spatial.col2im`.

Exact: finite test values are multiples of 1/16 below 8 in magnitude, so every sum is exact in
f32 (and in f16), and the one rounding to the output type matches the oracle's exact sum
(bf16 is held to 1 ulp: the CPU plugin rounds its partial sums).
Batched and unbatched data, kernels of 1 to 3 taps per axis with overlapping blocks (stride
below the kernel), strides, dilations (0 included) and pads, output_size and kernel_size as
constants (shape known at inference) and as run-time Parameters, in i32 and i64, the float and
integer types (integer sums wrap), and the refusals: data rank, data type, the type and shape
of output_size and kernel_size, the attributes' lengths and ranges, kernel and output sizes
below 1, a block dimension that does not divide by the kernel, the wrong number of blocks.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.spatial import col2im

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64")
JUDGE = {"i64": {"openvino": "none", "why": "the CPU plugin computes i64 in i32"},
         "f64": {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}}
PARAM = {"openvino": "none", "why": "neither the CPU plugin nor the core reference runs Col2Im with run-time "
                                    "output_size and kernel_size"}
# The CPU plugin rounds the partial sums of bf16 data to bf16; irscatter (and the oracle) round
# the exact sum once, so bf16 is held to 1 ulp (4 against the plugin).
BF16 = {"ulps": 1}
DEFAULTS = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0]}


def _values(rng, shape, dtype):
    wide = harness.values(rng, shape, dtype, edges=True, low=-8, high=8)
    if np.dtype(dtype).kind in "iu":
        return wide
    wide = wide.astype(np.float64)
    finite = np.isfinite(wide) & (np.abs(wide) > 1e-30)
    return np.where(finite, np.round(wide * 16) / 16, wide).astype(dtype)


def _blocks(output, kernel, attrs):
    return [(o + pb + pe - d * (k - 1) - 1) // s + 1 for o, k, s, d, pb, pe in
            zip(output, kernel, attrs["strides"], attrs["dilations"], attrs["pads_begin"], attrs["pads_end"])]


def _case(name, x, output, kernel, attrs, *, const=True, itype=np.int64, written=True, **extra):
    """With `written`, every attribute is written in the IR (OpenVINO crashes on a Col2Im layer
    that leaves one out, although the spec gives each a default)."""
    full = {**DEFAULTS, **attrs}
    return Case(name, "Col2Im", "opset15",
                [Input("data", x), Input("output_size", np.array(output, itype), const=const),
                 Input("kernel_size", np.array(kernel, itype), const=const)], full if written else attrs,
                oracle=lambda a, o, k: col2im(a, o, k, **full), **extra)


def _cases():
    rng = np.random.default_rng(27)
    cases = []
    for n, (tag, dtype) in enumerate(TYPES.items()):
        for variant in range(3):
            kernel = [int(v) for v in rng.integers(1, 4, 2)]
            attrs = {"strides": [int(v) for v in rng.integers(1, 3, 2)],
                     "dilations": [int(v) for v in rng.integers(1, 3, 2)],
                     "pads_begin": [int(v) for v in rng.integers(0, 2, 2)],
                     "pads_end": [int(v) for v in rng.integers(0, 3, 2)]}
            if variant == 0:
                attrs = {}
            full = {**DEFAULTS, **attrs}
            output = [int(max(v, (k - 1) * d + 1)) for v, k, d in zip(rng.integers(2, 7, 2), kernel, full["dilations"])]
            lr, lc = _blocks(output, kernel, full)
            channels = int(rng.integers(1, 3))
            batched = variant != 2
            shape = ((int(rng.integers(1, 3)),) if batched else ()) + (channels * kernel[0] * kernel[1], lr * lc)
            const = (n + variant) % 3 != 1
            cases.append(_case(f"col2im-{tag}-{variant}-{'batched' if batched else 'unbatched'}-"
                               f"{'const' if const else 'param'}", _values(rng, shape, dtype), output, kernel, attrs,
                               const=const, itype=np.int32 if variant == 1 else np.int64,
                               **(JUDGE.get(tag, {}) if const else PARAM), **(BF16 if tag == "bf16" else {})))
    spec2 = {"dilations": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1], "strides": [2, 2]}
    cases.append(_case("col2im-spec-1", _values(rng, (3, 12, 225), np.float32), [16, 16], [2, 2], {}))
    cases.append(_case("col2im-spec-2", _values(rng, (1, 27, 49), np.float32), [16, 16], [3, 3], spec2))
    # The spec's example 3 declares L = 324 without strides, which give 36 x 36 = 1296 blocks;
    # strides 2, 2 give the 18 x 18 = 324 it declares.
    cases.append(_case("col2im-spec-3-strided", _values(rng, (12, 12, 324), np.float32), [32, 32], [2, 2],
                       {"dilations": [2, 2], "pads_begin": [3, 3], "pads_end": [3, 3], "strides": [2, 2]}))
    cases.append(Case("col2im-refuses-spec-3", "Col2Im", "opset15",
                      [Input("data", np.ones((12, 12, 324), np.float32)),
                       Input("output_size", np.array([32, 32], np.int64), const=True),
                       Input("kernel_size", np.array([2, 2], np.int64), const=True)],
                      {"dilations": [2, 2], "pads_begin": [3, 3], "pads_end": [3, 3]}, error="col2im-blocks"))
    cases.append(_case("col2im-spec-4", _values(rng, (12, 225), np.float32), [16, 16], [2, 2], {}))
    cases.append(_case("col2im-defaults-left-out", _values(rng, (2, 8, 6), np.float32), [3, 4], [2, 2], {},
                       written=False, openvino="none", why="OpenVINO crashes on a Col2Im layer without strides, "
                       "dilations, pads_begin and pads_end"))
    cases.append(_case("col2im-dilation-zero", _values(rng, (1, 4, 9), np.float32), [3, 3], [2, 2],
                       {"dilations": [0, 0]}, openvino="none", why="irscatter follows the spec's non-negative "
                       "dilations; the CPU plugin's treatment of 0 is not checked"))
    cases.append(_case("col2im-large-pads", _values(rng, (1, 1, 4), np.float32), [1, 1], [1, 1],
                       {"pads_begin": [3, 0], "pads_end": [0, 3], "strides": [3, 3]}))
    x = np.ones((1, 4, 9), np.float32)
    o, k = np.array([4, 4], np.int64), np.array([2, 2], np.int64)
    refusals = [
        ("rank", np.ones((4,), np.float32), o, k, {}, "data-rank"),
        ("rank-4", np.ones((1, 1, 4, 9), np.float32), o, k, {}, "data-rank"),
        ("boolean", x > 0, o, k, {}, "col2im-type"),
        ("size-type", x, o.astype(np.int16), k, {}, "col2im-input-type"),
        ("kernel-type", x, o, k.astype(np.float32), {}, "col2im-input-type"),
        ("size-shape", x, np.array([4, 4, 1], np.int64), k, {}, "col2im-input-shape"),
        ("kernel-rank", x, o, np.array([[2, 2]], np.int64), {}, "col2im-input-shape"),
        ("strides-count", x, o, k, {"strides": [1]}, "col2im-attribute"),
        ("stride-zero", x, o, k, {"strides": [0, 1]}, "col2im-attribute"),
        ("pad-negative", x, o, k, {"pads_end": [0, -1]}, "col2im-attribute"),
        ("dilation-negative", x, o, k, {"dilations": [-1, 1]}, "col2im-attribute"),
        ("kernel-zero", x, o, np.array([0, 2], np.int64), {}, "col2im-kernel"),
        ("size-zero", x, np.array([0, 4], np.int64), k, {}, "col2im-output-size"),
        ("channels", np.ones((1, 6, 9), np.float32), o, k, {}, "col2im-channels"),
        ("block-count", np.ones((1, 4, 8), np.float32), o, k, {}, "col2im-blocks"),
        ("kernel-too-large", np.ones((1, 25, 1), np.float32), o, np.array([5, 5], np.int64), {}, "col2im-blocks"),
    ]
    for name, data, size, kern, attrs, label in refusals:
        for const in (True, False):
            if not const and label not in ("col2im-kernel", "col2im-output-size", "col2im-channels", "col2im-blocks"):
                continue
            cases.append(Case(f"col2im-refuses-{name}-{'const' if const else 'param'}", "Col2Im", "opset15",
                              [Input("data", data), Input("output_size", size, const=const),
                               Input("kernel_size", kern, const=const)], attrs, error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_col2im(case):
    harness.check(case, CASES)
