"""Convolution-1 and GroupConvolution-1 against OpenVINO's CPU plugin and the per-element oracle.

Tolerance: a convolution output is a sum of L = C_IN * prod(kernel) products, summed in another
order by the CPU plugin (blocked, vectorized) than by irscatter (one matrix product per kernel
offset) or the oracle (f64). The error bound of such a sum is about L units of f32 rounding of
the sum of magnitudes, not of the result (which may cancel to near 0), so each case allows
`atol` = L * 2^-21 * max|data| * max|filters| (f32 rounding, with a factor 4 of headroom) on
top of 2 ulps of the output type (the final rounding of f16/bf16, which are computed in f32).
f64 cases use the same f32-scaled atol: the CPU plugin computes f64 convolutions in f32.
Integer cases are exact: with small values against the CPU plugin; with the type's extremes,
whose sums overflow, against the oracle only (irscatter wraps as OpenVINO's reference does, the
CPU plugin computes in floats and saturates).
"""

from __future__ import annotations

import math
from functools import partial

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import convolution as oracle

from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops import registry
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op

FLOATS = (np.float32, np.float16, ml_dtypes.bfloat16, np.float64)
INTEGERS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")
F64_EDGES = "the CPU plugin computes f64 in f32 and saturates infinities to the f32 maximum"
EMPTY = {"cin0": "with no input channels the CPU plugin returns uninitialized memory instead of zeros",
         "spatial0": "the CPU plugin cannot compile a same_upper convolution of an empty spatial axis"}
WRAPS = "the CPU plugin computes integer convolutions in floats and saturates; irscatter wraps as the reference"
AVX2_INT8 = "the CPU plugin's AVX2 int8 convolution sums pairs of products in saturating 16-bit lanes"
AVX2_PADDING = "the CPU plugin's AVX2 convolution multiplies the padding's zeros by the weights (0 * inf is NaN)"


def _atol(data: np.ndarray, filters: np.ndarray, length: int) -> float:
    if data.dtype.kind in "iu" or data.size == 0 or filters.size == 0:
        return 0.0
    d, f = np.abs(data.astype(np.float64)), np.abs(filters.astype(np.float64))
    peak = float(np.max(d[np.isfinite(d)], initial=0.0)) * float(np.max(f[np.isfinite(f)], initial=0.0))
    return max(length, 1) * 2.0 ** -21 * peak


def _case(cid, op, data, filters, attrs, *, const_filters=False, openvino="cpu", why="", ulps=None, avx512_path=""):
    grouped = op == "GroupConvolution"
    c_in = filters.shape[2] if grouped else filters.shape[1]
    length = c_in * math.prod(filters.shape[3 if grouped else 2:])
    fn = oracle.group_convolution if grouped else oracle.convolution
    floats = data.dtype.kind == "f" or data.dtype == ml_dtypes.bfloat16
    return Case(cid, op, "opset1", [Input("data", data), Input("filters", filters, const=const_filters)], attrs,
                oracle=partial(fn, **attrs), openvino=openvino, why=why, avx512_path=avx512_path,
                ulps=(2 if floats else 0) if ulps is None else ulps, atol=_atol(data, filters, length))


def _geometry(rng, n, auto_pad):
    strides = [int(v) for v in rng.integers(1, 4, n)]
    dilations = [int(v) for v in rng.integers(1, 3, n)]
    kernel = [int(v) for v in rng.integers(1, 4, n)]
    spatial = [int(v) for v in rng.integers(3, 6 if n < 3 else 4, n)]
    pads_begin = [int(v) for v in rng.integers(0, 3, n)]
    pads_end = [int(v) for v in rng.integers(0, 3, n)]
    if auto_pad in ("explicit", "valid"):  # the dilated kernel must fit the padded input
        extra = (pads_begin, pads_end) if auto_pad == "explicit" else ([0] * n, [0] * n)
        for a in range(n):
            while (kernel[a] - 1) * dilations[a] + 1 > spatial[a] + extra[0][a] + extra[1][a]:
                dilations[a] = 1
                kernel[a] -= 1
    attrs = {"strides": strides, "dilations": dilations, "pads_begin": pads_begin, "pads_end": pads_end,
             "auto_pad": auto_pad}
    return attrs, kernel, spatial


def _shapes(rng, op, n_batch, groups, c_in, c_out, spatial, kernel):
    if op == "GroupConvolution":
        return (n_batch, groups * c_in, *spatial), (groups, c_out, c_in, *kernel)
    return (n_batch, c_in, *spatial), (c_out, c_in, *kernel)


def _cases():
    rng = np.random.default_rng(2024)
    cases = []
    for op in ("Convolution", "GroupConvolution"):
        # every spatial rank and auto_pad, f32, two geometries each
        for n in (1, 2, 3):
            for auto_pad in AUTO_PADS:
                for trial in range(2):
                    attrs, kernel, spatial = _geometry(rng, n, auto_pad)
                    groups = int(rng.integers(1, 4)) if op == "GroupConvolution" else 1
                    dshape, fshape = _shapes(rng, op, int(rng.integers(1, 3)), groups, int(rng.integers(1, 4)),
                                             int(rng.integers(1, 3)), spatial, kernel)
                    data = harness.values(rng, dshape, np.float32)
                    filters = harness.values(rng, fshape, np.float32)
                    cases.append(_case(f"{op}-{n}d-{auto_pad}-{trial}", op, data, filters, attrs,
                                       const_filters=trial == 1))
        # element types, with edge values (NaN, inf, -0, denormals) for floats
        for dtype in FLOATS:
            for n in (1, 2):
                attrs, kernel, spatial = _geometry(rng, n, "explicit")
                dshape, fshape = _shapes(rng, op, 2, 2, 2, 2, spatial, kernel)
                data = harness.values(rng, dshape, dtype, edges=True)
                filters = harness.values(rng, fshape, dtype, edges=n == 2)
                f64 = np.dtype(dtype) == np.float64
                cases.append(_case(f"{op}-{np.dtype(dtype).name}-{n}d-edges", op, data, filters, attrs,
                                   openvino="none" if f64 else "cpu", why=F64_EDGES if f64 else ""))
            attrs, kernel, spatial = _geometry(rng, 2, "same_lower")
            dshape, fshape = _shapes(rng, op, 1, 2, 2, 2, spatial, kernel)
            cases.append(_case(f"{op}-{np.dtype(dtype).name}", op, harness.values(rng, dshape, dtype),
                               harness.values(rng, fshape, dtype), attrs))
        for dtype in INTEGERS:
            attrs, kernel, spatial = _geometry(rng, 2, "same_upper")
            dshape, fshape = _shapes(rng, op, 1, 2, 2, 2, spatial, kernel)
            low = 0 if np.dtype(dtype).kind == "u" else -4
            data, filters = harness.values(rng, dshape, dtype, low=low), harness.values(rng, fshape, dtype, low=low)
            cases.append(_case(f"{op}-{np.dtype(dtype).name}", op, data, filters, attrs,
                               avx512_path=AVX2_INT8 if dtype == np.int8 else ""))
            data = harness.values(rng, dshape, dtype, low=low, edges=True)
            filters = harness.values(rng, fshape, dtype, low=low, edges=True)
            cases.append(_case(f"{op}-{np.dtype(dtype).name}-wraps", op, data, filters, attrs, openvino="none",
                               why=WRAPS))
        # size-0 dimensions: batch, input channels (zeros out), output channels, spatial with same_*
        base = {"strides": [1], "dilations": [1], "pads_begin": [1], "pads_end": [0]}
        for name, (dshape, fshape, auto_pad) in {
            "batch0": ((0, 2, 4), (3, 2, 2), "explicit"),
            "cin0": ((1, 0, 4), (3, 0, 2), "explicit"),
            "cout0": ((1, 2, 4), (0, 2, 2), "explicit"),
            "spatial0": ((1, 2, 0), (3, 2, 2), "same_upper"),
        }.items():
            if op == "GroupConvolution":
                fshape = (1, *fshape)
            data = harness.values(rng, dshape, np.float32)
            filters = harness.values(rng, fshape, np.float32)
            why = EMPTY.get(name, "")
            cases.append(_case(f"{op}-{name}", op, data, filters, {**base, "auto_pad": auto_pad},
                               openvino="none" if why else "cpu", why=why))
        # taps in the padding contribute nothing, even with an infinite weight
        data = np.array([[[1, 2, 3]]], np.float32)
        filters = np.array([[[np.inf, 1, -np.inf]]], np.float32)
        if op == "GroupConvolution":
            filters = filters[None]
        cases.append(_case(f"{op}-inf-weight-in-padding", op, data, filters,
                           {"strides": [1], "dilations": [1], "pads_begin": [1], "pads_end": [1]},
                           avx512_path=AVX2_PADDING))
        # both inputs constant: folded at inference
        attrs, kernel, spatial = _geometry(rng, 2, "explicit")
        dshape, fshape = _shapes(rng, op, 1, 2, 2, 2, spatial, kernel)
        c = _case(f"{op}-folded", op, harness.values(rng, dshape, np.float32),
                  harness.values(rng, fshape, np.float32), attrs, const_filters=True)
        c.inputs[0].const = True
        cases.append(c)
    cases += _errors(rng)
    return cases


def _errors(rng):
    f32 = np.float32
    ok = {"strides": [1], "dilations": [1], "pads_begin": [0], "pads_end": [0]}
    x, w = np.zeros((1, 2, 4), f32), np.zeros((3, 2, 2), f32)
    wg = np.zeros((2, 3, 1, 2), f32)
    out = []

    def err(cid, label, op, data, filters, attrs=ok):
        out.append(Case(cid, op, "opset1", [Input("data", data), Input("filters", filters)], attrs, error=label))

    err("rank-2", "conv-rank", "Convolution", np.zeros((1, 2), f32), np.zeros((3, 2), f32))
    err("rank-6", "conv-rank", "Convolution", np.zeros((1, 1, 1, 1, 1, 1), f32), np.zeros((1, 1, 1, 1, 1, 1), f32))
    err("filter-rank", "conv-filter-rank", "Convolution", x, np.zeros((3, 2, 2, 2), f32))
    err("group-filter-rank", "conv-filter-rank", "GroupConvolution", x, w)
    err("channels", "conv-channels", "Convolution", x, np.zeros((3, 1, 2), f32))
    err("group-channels", "conv-channels", "GroupConvolution", x, np.zeros((3, 3, 1, 2), f32))
    err("strides-length", "conv-attribute-length", "Convolution", x, w, {**ok, "strides": [1, 1]})
    err("pads-length", "conv-attribute-length", "GroupConvolution", x, wg, {**ok, "pads_end": [0, 0]})
    err("stride-0", "conv-attribute-range", "Convolution", x, w, {**ok, "strides": [0]})
    err("dilation-0", "conv-attribute-range", "Convolution", x, w, {**ok, "dilations": [0]})
    err("negative-pad", "conv-attribute-range", "Convolution", x, w, {**ok, "pads_begin": [-1]})
    err("kernel-too-big", "conv-window", "Convolution", x, np.zeros((3, 2, 5), f32))
    err("dilated-too-big", "conv-window", "Convolution", x, w, {**ok, "dilations": [4]})
    err("valid-too-big", "conv-window", "GroupConvolution", x, np.zeros((2, 3, 1, 5), f32),
        {**ok, "pads_begin": [3], "auto_pad": "valid"})
    err("kernel-0", "conv-window", "Convolution", x, np.zeros((3, 2, 0), f32), {**ok, "auto_pad": "same_upper"})
    err("boolean", "conv-type", "Convolution", x.astype(bool), w.astype(bool))
    err("mixed-types", "same-element-type", "Convolution", x, w.astype(np.float16))
    err("auto-pad", "attributes", "Convolution", x, w, {**ok, "auto_pad": "same"})
    err("no-strides", "attributes", "Convolution", x, w, {k: v for k, v in ok.items() if k != "strides"})
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_convolution_forward(case):
    harness.check(case, CASES)


def _infer(op, data, filters, **attrs):
    attrs = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], **attrs}
    return make_op(registry.find(op, "opset1"), attrs).infer(
        TensorInfo(data[0], data[1]), TensorInfo(filters[0], filters[1]))


def test_dynamic_dims_and_rank_propagate():
    from irscatter.ir.element_types import ElementType as E

    dyn = Dimension.dynamic()
    data = (E.f32, PartialShape.of([dyn, 4, 8, dyn]))
    out = _infer("Convolution", data, (E.f32, PartialShape.of([5, 4, 3, 3])))
    assert out.shape == PartialShape.of([dyn, 5, 6, dyn])
    out = _infer("Convolution", data, (E.f32, PartialShape.of([5, 4, 3, 3])), auto_pad="same_lower", strides=[3, 2])
    assert out.shape == PartialShape.of([dyn, 5, 3, dyn])
    out = _infer("GroupConvolution", data, (E.f32, PartialShape.of([dyn, 3, 2, 3, 3])))
    assert out.shape == PartialShape.of([dyn, 6, 6, dyn])  # groups learnt from 4 channels / 2
    out = _infer("Convolution", (E.f32, PartialShape.dynamic_rank()), (E.f32, PartialShape.of([5, 4, 3, 3])))
    assert out.shape == PartialShape.of([dyn, 5, dyn, dyn])
    out = _infer("GroupConvolution", (E.f32, PartialShape.dynamic_rank()), (E.f32, PartialShape.dynamic_rank()))
    assert out.shape == PartialShape.of([dyn, dyn, dyn, dyn])  # the rank from the attributes
    out = _infer("Convolution", (E.dynamic, PartialShape.dynamic_rank()), (E.f16, PartialShape.dynamic_rank()),
                 strides=[1, 1, 1, 1], dilations=[1, 1, 1, 1], pads_begin=[], pads_end=[])
    assert out.etype is E.f16 and not out.shape.rank_is_static


def test_core_geometry_for_other_convolutions():
    """The helpers DeformableConvolution and BinaryConvolution build on: pads, sizes, windows."""
    from irscatter.ops.convolution import core

    assert core.forward_pads("same_upper", [5], [4], [2], [1], [9], [9]) == ((1,), (2,))
    assert core.forward_pads("same_lower", [5], [4], [2], [1], [9], [9]) == ((2,), (1,))
    assert core.forward_pads("valid", [5], [4], [2], [1], [9], [9]) == ((0,), (0,))
    assert core.forward_pads("explicit", [5, 5], [3, 3], [1, 1], [1, 1], [], []) == ((0, 0), (0, 0))
    assert core.forward_output_dims("same_upper", [5, None], [4, 2], [2, 1], [1, 1], [1, 0], [2, 0]) == [3, None]
    assert core.forward_output_dims("explicit", [5], [3], [2], [2], [1], [0]) == [1]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 7, 6))
    padded = core.pad_spatial(x, (1, 2), (0, 1), value=-1.0)
    assert padded.shape == (2, 3, 8, 9) and padded[0, 0, 0, 0] == -1.0 and padded[0, 0, 1, 2] == x[0, 0, 0, 0]
    win = core.windows(padded, (2, 3), (3, 2), (2, 1))
    assert win.shape == (2, 3, 2, 4, 2, 3)
    for o in np.ndindex(2, 4):
        for k in np.ndindex(2, 3):
            assert win[1, 2, o[0], o[1], k[0], k[1]] == padded[1, 2, o[0] * 3 + k[0] * 2, o[1] * 2 + k[1]]
    assert core.windows(x, (9, 1), (1, 1), (1, 1)).shape == (2, 3, 0, 6, 9, 1)
