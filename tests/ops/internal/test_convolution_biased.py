"""ConvolutionBiased (domain `ie_internal_opset`), and the internal Convolution that is the same
op under its later name (its own attributes are in test_convolution.py): against the page's
out = sum w x + b transcribed in page_convolution_biased.py. OpenVINO is no oracle here: the
pinned 2026.4.1 holds neither op, and no transformation of it makes one. 1-D to 3-D spatial
axes, every auto_pad, every bias layout, no bias, size-0 dims, inf and NaN, float and integer
types (integer sums and the bias wrapping together), every label."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import one_layer_ir
from internal_checks import BF16, assert_close, run_unwritten
from page_convolution_biased import convolution_biased as page

import irscatter
from irscatter.errors import IRError
from irscatter.ops.internal.convolution import InternalConvolution
from irscatter.ops.internal.convolution_biased import ConvolutionBiased

OPS = [ConvolutionBiased, InternalConvolution]


def _attrs(n, **given):
    return {"strides": [1] * n, "pads_begin": [0] * n, "pads_end": [0] * n, "dilations": [1] * n, **given}


def _values(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-100 if np.dtype(dtype).kind == "i" else 0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def conv(cls, arrays, **attrs):
    return run_unwritten(cls, arrays, attrs)


def _check(cls, data, filters, bias, attrs):
    ours = conv(cls, [data, filters] + ([] if bias is None else [bias]), **attrs)
    expected = page(data, filters, bias, **attrs)
    assert ours.dtype == data.dtype and ours.shape == expected.shape
    if data.dtype.kind in "iu":
        np.testing.assert_array_equal(ours, expected)
    else:
        assert_close(ours, expected)


CASES = {
    # name: data shape, filters shape, bias shape (None: no bias), attributes
    "1d-valid-stride2-full-bias": ((1, 2, 9), (3, 2, 3), (1, 3, 4), {"strides": [2], "auto_pad": "valid"}),
    "1d-channel-bias": ((2, 2, 6), (4, 2, 2), (4,), {}),
    "2d-explicit-pads": ((1, 2, 4, 5), (3, 2, 3, 2), (1, 3, 1, 1), {"pads_begin": [1, 0], "pads_end": [2, 1]}),
    "2d-same-upper-dilated": ((1, 1, 5, 5), (2, 1, 2, 3), (1, 2, 5, 5),
                              {"auto_pad": "same_upper", "dilations": [2, 1]}),
    "2d-same-lower-stride": ((1, 2, 5, 4), (2, 2, 3, 3), (2,), {"auto_pad": "same_lower", "strides": [2, 2]}),
    "2d-bias-varying-along-x": ((1, 1, 3, 4), (2, 1, 2, 2), (1, 1, 1, 3), {}),
    "2d-no-bias": ((1, 2, 4, 4), (2, 2, 3, 3), None, {}),
    "3d": ((1, 1, 3, 4, 3), (2, 1, 2, 2, 2), (1, 2, 1, 1, 1), {}),
    "size-0-batch": ((0, 2, 5), (3, 2, 2), (3,), {}),
    "size-0-out-channels": ((1, 2, 5), (0, 2, 2), (0,), {}),
}


@pytest.mark.parametrize("cls", OPS, ids=lambda c: c.type_name)
@pytest.mark.parametrize("name", CASES)
def test_biased_convolution_matches_the_page(cls, name):
    data_shape, filters_shape, bias_shape, given = CASES[name]
    n = len(data_shape) - 2
    bias = None if bias_shape is None else _values(bias_shape, seed=2)
    _check(cls, _values(data_shape), _values(filters_shape, seed=1), bias, _attrs(n, **given))


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float64, np.int8, np.uint8, np.int32, np.int64])
def test_every_element_type(dtype):
    data, filters = _values((1, 2, 3, 3), dtype), _values((2, 2, 2, 2), dtype, 1)
    bias = _values((2,), dtype, 2)
    if np.dtype(dtype) == np.int8:  # sums and bias past i8's range: wrapped, as one sum would be
        data, filters, bias = np.full_like(data, 100), np.full_like(filters, 90), np.full_like(bias, 120)
    _check(ConvolutionBiased, data, filters, bias, _attrs(2))


def test_inf_and_nan_in_data_filters_and_bias():
    data, filters, bias = _values((1, 1, 4, 4)), _values((2, 1, 2, 2), seed=1), _values((2,), seed=2)
    data[0, 0, 0, 0], filters[1, 0, 1, 1], bias[0] = np.inf, np.nan, -np.inf
    _check(ConvolutionBiased, data, filters, bias, _attrs(2, pads_begin=[1, 1], pads_end=[1, 1]))


@pytest.mark.parametrize("bias_shape", [(3,), (2, 2), (1, 4, 1, 1), (1, 2, 3, 2), (2, 2, 2, 2), ()])
def test_a_bias_that_fits_neither_layout_is_refused(bias_shape):
    data, filters = _values((1, 2, 4, 4)), _values((2, 2, 3, 3), seed=1)  # output [1, 2, 2, 2]
    bias = np.zeros(bias_shape, np.float32)
    with pytest.raises(IRError) as caught:
        conv(ConvolutionBiased, [data, filters, bias], **_attrs(2))
    assert caught.value.label == "conv-bias-shape", caught.value


def test_a_bias_of_another_type_is_refused():
    data, filters = _values((1, 2, 4, 4)), _values((2, 2, 3, 3), seed=1)
    with pytest.raises(IRError) as caught:
        conv(ConvolutionBiased, [data, filters, np.zeros(2, np.float16)], **_attrs(2))
    assert caught.value.label == "same-element-type", caught.value


def test_a_layer_runs_from_an_ir_file_and_a_bias_its_dynamic_shape_hid_is_refused_when_it_runs(tmp_path):
    data, filters, bias = _values((1, 2, 4, 4)), _values((3, 2, 3, 3), seed=1), _values(3, seed=2)
    attrs = {"strides": "1,1", "pads_begin": "0,0", "pads_end": "0,0", "dilations": "1,1"}
    inputs = [("data", data), ("filters", filters), ("bias", bias)]
    path = one_layer_ir(tmp_path, "ConvolutionBiased", "ie_internal_opset", attrs, inputs, [((1, 3, 2, 2), np.float32)])
    out = next(iter(irscatter.read_model(path).run(dict(inputs)).values()))
    np.testing.assert_allclose(out, page(data, filters, bias, **_attrs(2)), rtol=2e-6, atol=2e-6)
    text = path.read_text().replace('shape="3"', 'shape="?"').replace('names="bias"><dim>3<', 'names="bias"><dim>-1<')
    path.write_text(text.replace('<port id="2" precision="FP32"><dim>3<', '<port id="2" precision="FP32"><dim>-1<'))
    with pytest.raises(IRError) as caught:
        irscatter.read_model(path).run({"data": data, "filters": filters, "bias": _values(4)})
    assert caught.value.label == "conv-bias-shape", caught.value
