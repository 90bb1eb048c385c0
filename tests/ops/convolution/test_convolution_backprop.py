"""ConvolutionBackpropData-1 and GroupConvolutionBackpropData-1 against OpenVINO's CPU plugin
and the per-element oracle.

Tolerance: as for the forward convolutions (`test_convolution_forward.py`): each output is a sum
of at most L = C_IN * prod(kernel) products, so `atol` = L * 2^-21 * max|data| * max|filters| on
top of 2 ulps of the output type.

With an output_shape input the spec splits the total padding between the two ends for every
auto_pad; OpenVINO does so only for same_upper and same_lower (explicit keeps pads_begin, valid
crops nothing at the beginning). The cases where the two answers differ are judged by the
oracle (the spec); those where they agree, by the CPU plugin.
"""

from __future__ import annotations

import math
from functools import partial

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, named_inputs
from oracles import convolution as oracle

from irscatter.ir.element_types import ElementType as E
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops import registry
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op

AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")
SPEC_PADS = ("with output_shape, OpenVINO keeps the explicit pads_begin (or 0 for valid) where the spec splits "
             "the total padding (total // 2 at the beginning): judged by the spec")
EMPTY = {"cin0": "the CPU plugin cannot compile a deconvolution with no input channels",
         "cout0": "the CPU plugin cannot compile a deconvolution with no output channels",
         "spatial0": "OpenVINO takes (0 - 1) * stride as 0 and gives an empty input 2 outputs of uninitialized memory; "
                     "the spec's stride * (in - 1) + dilated kernel is 0"}
WRAPS = "the CPU plugin computes integer convolutions in floats and saturates; irscatter wraps as the reference"
GROUP1 = "the CPU plugin cannot create a grouped deconvolution of one group with several channels"
BF16_NAN = ("with bf16 tensors the CPU plugin's deconvolution also puts a NaN weight's NaN on outputs the weight "
            "never reaches (it multiplies the weight by padding)")
F64_EDGES = "the CPU plugin computes f64 in f32 and saturates infinities to the f32 maximum"


def _atol(data, filters, length):
    if data.dtype.kind in "iu" or data.size == 0 or filters.size == 0:
        return 0.0
    d, f = np.abs(data.astype(np.float64)), np.abs(filters.astype(np.float64))
    peak = float(np.max(d[np.isfinite(d)], initial=0.0)) * float(np.max(f[np.isfinite(f)], initial=0.0))
    return max(length, 1) * 2.0 ** -21 * peak


def _case(cid, op, data, filters, attrs, output_shape=None, *, const_shape=True, openvino="cpu", why=""):
    grouped = op == "GroupConvolutionBackpropData"
    c_in = filters.shape[1] if grouped else filters.shape[0]
    length = c_in * math.prod(filters.shape[3 if grouped else 2:])
    fn = oracle.group_convolution_backprop_data if grouped else oracle.convolution_backprop_data
    inputs = [Input("data", data), Input("filters", filters)]
    if output_shape is not None:
        inputs.append(Input("output_shape", np.asarray(output_shape, np.int64), const=const_shape))
    floats = data.dtype.kind == "f" or data.dtype == ml_dtypes.bfloat16
    return Case(cid, op, "opset1", inputs, attrs, oracle=partial(fn, **attrs), openvino=openvino, why=why,
                ulps=2 if floats else 0, atol=_atol(data, filters, length))


def _full(spatial, kernel, attrs):
    return [s * (i - 1) + (k - 1) * d + 1 for i, k, s, d in zip(spatial, kernel, attrs["strides"], attrs["dilations"])]


def _spec_and_openvino_agree(attrs, spatial, kernel, output_shape):
    """Whether OpenVINO's pads_begin equals the spec's for this output_shape."""
    if output_shape is None or attrs["auto_pad"] in ("same_upper", "same_lower"):
        return True
    pads = attrs["pads_begin"] if attrs["auto_pad"] == "explicit" else [0] * len(spatial)
    for full, pad, out, extra in zip(_full(spatial, kernel, attrs), pads, output_shape, attrs["output_padding"]):
        total = full - out + extra
        if max(total, 0) // 2 != pad:
            return False
    return True


def _geometry(rng, n, auto_pad):
    strides = [int(v) for v in rng.integers(1, 4, n)]
    attrs = {
        "strides": strides,
        "dilations": [int(v) for v in rng.integers(1, 3, n)],
        "pads_begin": [int(v) for v in rng.integers(0, 2, n)],
        "pads_end": [int(v) for v in rng.integers(0, 2, n)],
        "auto_pad": auto_pad,
        # output_padding below the stride (and dilation), as frameworks produce it
        "output_padding": [int(rng.integers(0, s)) for s in strides],
    }
    kernel = [int(v) for v in rng.integers(1, 4, n)]
    spatial = [int(v) for v in rng.integers(1, 5 if n < 3 else 3, n)]
    return attrs, kernel, spatial


def _shapes(op, n_batch, groups, c_in, c_out, spatial, kernel):
    if op == "GroupConvolutionBackpropData":
        return (n_batch, groups * c_in, *spatial), (groups, c_in, c_out, *kernel)
    return (n_batch, c_in, *spatial), (c_in, c_out, *kernel)


def _cases():
    rng = np.random.default_rng(77)
    cases = []
    for op in ("ConvolutionBackpropData", "GroupConvolutionBackpropData"):
        grouped = op.startswith("Group")
        for n in (1, 2, 3):
            for auto_pad in AUTO_PADS:
                for with_shape in (False, True):
                    attrs, kernel, spatial = _geometry(rng, n, auto_pad)
                    groups = int(rng.integers(2, 4)) if grouped else 1  # see GROUP1 for one group
                    dshape, fshape = _shapes(op, int(rng.integers(1, 3)), groups, int(rng.integers(1, 3)),
                                             int(rng.integers(1, 3)), spatial, kernel)
                    data, filters = harness.values(rng, dshape, np.float32), harness.values(rng, fshape, np.float32)
                    shape = None
                    if with_shape:  # at, below and above the full size
                        shape = [max(1, f + int(rng.integers(-2, 3))) for f in _full(spatial, kernel, attrs)]
                    elif auto_pad == "explicit":
                        attrs["pads_begin"] = [min(p, f // 2) for p, f in zip(attrs["pads_begin"],
                                                                               _full(spatial, kernel, attrs))]
                        attrs["pads_end"] = [min(p, f // 2) for p, f in zip(attrs["pads_end"],
                                                                             _full(spatial, kernel, attrs))]
                    agree = _spec_and_openvino_agree(attrs, spatial, kernel, shape)
                    cases.append(_case(f"{op}-{n}d-{auto_pad}{'-shape' if with_shape else ''}", op, data, filters,
                                       attrs, shape, openvino="cpu" if agree else "none",
                                       why="" if agree else SPEC_PADS))
        # the spec's output_shape rule where OpenVINO differs, and where it agrees, side by side
        data = harness.values(rng, (1, 1, 3) if not grouped else (1, 2, 3), np.float32)
        filters = harness.values(rng, (1, 1, 1, 3) if grouped else (1, 1, 3), np.float32)
        if grouped:
            filters = np.concatenate([filters, filters * 2])
        base = {"strides": [2], "dilations": [1], "output_padding": [0]}
        for name, attrs, shape in (
            ("explicit-asymmetric", {**base, "pads_begin": [2], "pads_end": [1], "auto_pad": "explicit"}, [4]),
            ("explicit-consistent", {**base, "pads_begin": [1], "pads_end": [2], "auto_pad": "explicit"}, [4]),
            ("valid-smaller", {**base, "pads_begin": [0], "pads_end": [0], "auto_pad": "valid"}, [5]),
            ("valid-larger", {**base, "pads_begin": [0], "pads_end": [0], "auto_pad": "valid"}, [9]),
            ("same_upper-odd", {**base, "pads_begin": [0], "pads_end": [0], "auto_pad": "same_upper"}, [4]),
            ("same_lower-odd", {**base, "pads_begin": [0], "pads_end": [0], "auto_pad": "same_lower"}, [4]),
            ("same_lower-larger", {**base, "pads_begin": [0], "pads_end": [0], "auto_pad": "same_lower"}, [10]),
        ):
            spatial, kernel = [3], [3]
            agree = _spec_and_openvino_agree(attrs, spatial, kernel, shape)
            cases.append(_case(f"{op}-{name}", op, data, filters, attrs, shape, openvino="cpu" if agree else "none",
                               why="" if agree else SPEC_PADS))
        # output_shape fed at run time
        attrs = {**base, "pads_begin": [0], "pads_end": [0], "auto_pad": "same_upper"}
        cases.append(_case(f"{op}-shape-parameter", op, data, filters, attrs, [6], const_shape=False,
                           openvino="none", why="the CPU plugin cannot run an output_shape that is not a constant"))
        if grouped:  # one group of several channels
            cases.append(_case(f"{op}-one-group", op, harness.values(rng, (2, 2, 3), np.float32),
                               harness.values(rng, (1, 2, 3, 2), np.float32), attrs, openvino="none", why=GROUP1))
        # element types, with edge values for floats; integers small (CPU) and with extremes (oracle)
        for dtype in (np.float32, np.float16, ml_dtypes.bfloat16, np.float64):
            attrs, kernel, spatial = _geometry(rng, 2, "same_upper")
            dshape, fshape = _shapes(op, 2, 2, 2, 2, spatial, kernel)
            shape = _full(spatial, kernel, attrs)
            f64, bf16 = np.dtype(dtype) == np.float64, np.dtype(dtype) == ml_dtypes.bfloat16
            data = harness.values(rng, dshape, dtype, edges=True)
            cases.append(_case(f"{op}-{np.dtype(dtype).name}-edges", op, data,
                               harness.values(rng, fshape, dtype, edges=True), attrs, shape,
                               openvino="none" if f64 or bf16 else "cpu",
                               why=F64_EDGES if f64 else BF16_NAN if bf16 else ""))
            if bf16:  # edge values in the data only
                cases.append(_case(f"{op}-{np.dtype(dtype).name}-data-edges", op, data,
                                   harness.values(rng, fshape, dtype), attrs, shape))
            cases.append(_case(f"{op}-{np.dtype(dtype).name}", op, harness.values(rng, dshape, dtype),
                               harness.values(rng, fshape, dtype), attrs))
        for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
            attrs, kernel, spatial = _geometry(rng, 2, "explicit")
            attrs["pads_begin"], attrs["pads_end"] = [0, 0], [0, 0]
            dshape, fshape = _shapes(op, 1, 2, 2, 2, spatial, kernel)
            low = 0 if np.dtype(dtype).kind == "u" else -4
            cases.append(_case(f"{op}-{np.dtype(dtype).name}", op, harness.values(rng, dshape, dtype, low=low),
                               harness.values(rng, fshape, dtype, low=low), attrs))
            cases.append(_case(f"{op}-{np.dtype(dtype).name}-wraps", op,
                               harness.values(rng, dshape, dtype, low=low, edges=True),
                               harness.values(rng, fshape, dtype, low=low, edges=True), attrs, openvino="none",
                               why=WRAPS))
        # an infinite weight: the zeros a strided formulation inserts are never multiplied
        data = np.array([[[1, 10, 100]]], np.float32)
        filters = np.array([[[np.inf, 2, 3]]], np.float32)
        cases.append(_case(f"{op}-inf-weight-strided", op, data, filters[None] if grouped else filters,
                           {"strides": [2], "dilations": [1], "pads_begin": [1], "pads_end": [1]}))
        # size-0 dimensions
        for name, (dshape, fshape) in {"batch0": ((0, 2, 3), (2, 3, 2)), "cin0": ((1, 0, 3), (0, 3, 2)),
                                       "cout0": ((1, 2, 3), (2, 0, 2)), "spatial0": ((1, 2, 0), (2, 3, 2))}.items():
            if grouped:  # two groups (see GROUP1)
                fshape = (2, fshape[0] // 2, *fshape[1:])
            attrs = {"strides": [2], "dilations": [1], "pads_begin": [0], "pads_end": [0]}
            why = EMPTY.get(name, "")
            cases.append(_case(f"{op}-{name}", op, harness.values(rng, dshape, np.float32),
                               harness.values(rng, fshape, np.float32), attrs, openvino="none" if why else "cpu",
                               why=why))
    cases += _errors()
    return cases


def _errors():
    f32 = np.float32
    ok = {"strides": [1], "dilations": [1], "pads_begin": [0], "pads_end": [0]}
    x, w = np.zeros((1, 2, 3), f32), np.zeros((2, 3, 2), f32)
    out = []

    def err(cid, label, op, inputs, attrs=ok):
        names = ("data", "filters", "output_shape")
        out.append(Case(cid, op, "opset1", named_inputs(names, inputs, const=("output_shape",)),
                        attrs, error=label))

    cb, gcb = "ConvolutionBackpropData", "GroupConvolutionBackpropData"
    err("rank", "conv-rank", cb, [np.zeros((1, 2), f32), np.zeros((2, 3), f32)])
    err("filter-rank", "conv-filter-rank", gcb, [x, w])
    err("channels", "conv-channels", cb, [x, np.zeros((3, 3, 2), f32)])
    err("group-channels", "conv-channels", gcb, [x, np.zeros((3, 1, 3, 2), f32)])
    err("output-padding-length", "conv-attribute-length", cb, [x, w], {**ok, "output_padding": [0, 0]})
    err("negative-output-padding", "conv-attribute-range", cb, [x, w], {**ok, "output_padding": [-1]})
    err("stride-0", "conv-attribute-range", gcb, [x, w[None]], {**ok, "strides": [0]})
    err("kernel-0", "conv-window", cb, [x, np.zeros((2, 3, 0), f32)])
    err("type", "conv-type", cb, [x.astype(bool), w.astype(bool)])
    err("mixed-types", "same-element-type", cb, [x, w.astype(np.float64)])
    err("output-shape-type", "conv-output-shape", cb, [x, w, np.array([4.0], f32)])
    err("output-shape-rank", "conv-output-shape", cb, [x, w, np.array([[4]], np.int64)])
    err("output-shape-length", "conv-output-shape", gcb, [x, w[None], np.array([4, 4], np.int32)])
    err("output-shape-negative", "conv-output-shape", cb, [x, w, np.array([-1], np.int64)])
    err("pads-crop-everything", "conv-output-size", cb, [x, w], {**ok, "pads_begin": [3], "pads_end": [2]})
    return out


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_convolution_backprop(case):
    harness.check(case, CASES)


def _infer(op, data, filters, output_shape=None, **attrs):
    attrs = {"strides": [2, 2], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], **attrs}
    infos = [TensorInfo(*data), TensorInfo(*filters)] + ([output_shape] if output_shape is not None else [])
    return make_op(registry.find(op, "opset1"), attrs).infer(*infos)


def test_dynamic_dims_rank_and_output_shape_propagate():
    dyn = Dimension.dynamic()
    data = (E.f32, PartialShape.of([dyn, 4, 3, dyn]))
    out = _infer("ConvolutionBackpropData", data, (E.f32, PartialShape.of([4, 5, 3, 3])))
    assert out.shape == PartialShape.of([dyn, 5, 7, dyn])
    out = _infer("GroupConvolutionBackpropData", data, (E.f32, PartialShape.of([dyn, 2, 5, 3, 3])),
                 output_padding=[1, 1])
    assert out.shape == PartialShape.of([dyn, 10, 8, dyn])
    shape = TensorInfo(E.i32, PartialShape.of([2]))  # known length, unknown values
    out = _infer("ConvolutionBackpropData", data, (E.f32, PartialShape.of([4, 5, 3, 3])), shape)
    assert out.shape == PartialShape.of([dyn, 5, dyn, dyn])
    shape = TensorInfo.of(np.array([9, 11], np.int64))
    out = _infer("ConvolutionBackpropData", (E.f32, PartialShape.dynamic_rank()), (E.f32, PartialShape.dynamic_rank()),
                 shape, auto_pad="same_lower")
    assert out.shape == PartialShape.of([dyn, dyn, 9, 11])
    shape = TensorInfo(E.i64, PartialShape.of([3]))  # the spatial rank from output_shape alone
    out = _infer("ConvolutionBackpropData", (E.f32, PartialShape.dynamic_rank()), (E.f32, PartialShape.dynamic_rank()),
                 shape, strides=[1, 1, 1], dilations=[1, 1, 1], pads_begin=[], pads_end=[])
    assert out.shape.rank == 5
