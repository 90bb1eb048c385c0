"""The internal Convolution (domain `ie_internal_opset`): ConvolutionBiased under its later name,
whose arithmetic is tested against the page in test_convolution_biased.py. Here: what makes it
a distinct op (a layer tagged ie_internal_opset is this one, with its bias; tagged opsetN it is
Convolution-1, which takes none), and the attributes of OpenVINO's last version of the class,
which the page does not describe: accepted where they change nothing, refused otherwise."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import one_layer_ir
from page_convolution_biased import convolution_biased as page

import irscatter
from irscatter.errors import IRError
from irscatter.ops.functional import make_op, run_op
from irscatter.ops.internal.convolution import InternalConvolution

ATTRS = {"strides": "1", "pads_begin": "0", "pads_end": "0", "dilations": "1"}


def _arrays():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in ((1, 2, 5), (3, 2, 2), (3,))]


def test_the_tag_picks_the_op(tmp_path):
    arrays = _arrays()
    inputs = list(zip(("data", "filters", "bias"), arrays))
    path = one_layer_ir(tmp_path, "Convolution", "ie_internal_opset", ATTRS, inputs, [((1, 3, 4), np.float32)])
    out = next(iter(irscatter.read_model(path).run(dict(inputs)).values()))
    np.testing.assert_allclose(out, page(*arrays, strides=[1], pads_begin=[0], pads_end=[0], dilations=[1]),
                               rtol=2e-6, atol=2e-6)
    path = one_layer_ir(tmp_path, "Convolution", "opset1", ATTRS, inputs, [((1, 3, 4), np.float32)], name="public")
    with pytest.raises(IRError) as caught:
        irscatter.compile_model(path)
    assert caught.value.label == "input-count"


@pytest.mark.parametrize("attrs", [{"groups": -1}, {"groups": 0}, {"output_type": "f32"},
                                   {"output_type": "undefined"}, {"output_type": "dynamic"}, {"asymmetric": False}])
def test_the_later_attributes_that_change_nothing_are_accepted(attrs):
    arrays = _arrays()
    out = run_op(make_op(InternalConvolution, {**ATTRS, **attrs}), arrays)
    assert out.shape == (1, 3, 4) and out.dtype == np.float32


@pytest.mark.parametrize("attrs", [{"groups": 2}, {"asymmetric": True}, {"output_type": "f16"}])
def test_the_later_attributes_the_page_does_not_describe_are_refused(attrs):
    with pytest.raises(IRError) as caught:
        run_op(make_op(InternalConvolution, {**ATTRS, **attrs}), _arrays())
    assert caught.value.label == "conv-internal-attribute", caught.value
