"""RMS (domain `ie_internal_opset`). Two oracles: OpenVINO's CPU plugin, out of process, which
reads the same IR file irscatter reads once the plugin is loaded (internal_openvino.py: ranks 1
to 4, every scale layout it takes and none, f32 and f16 data, output_type f16, edge rows with
inf, NaN and squares past f32's range); and the page's formula transcribed in page_rms.py, for
everything (size-0 dims, full-shape and per-row scales, every float type and output_type, both
spellings of epsilon, elementwise_affine, axis). Every label is triggered, through IR files
where a layer is needed."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import one_layer_ir
from internal_checks import BF16, assert_close, run_unwritten
from internal_openvino import RMS_CASES, assert_matches_openvino, needs_openvino
from page_rms import rms as page

import irscatter
from irscatter.errors import IRError
from irscatter.ops.functional import make_op
from irscatter.ops.internal.rms import RMS


def rms(arrays, **attrs):
    if "eps" not in attrs:
        attrs.setdefault("epsilon", 1e-6)
    return run_unwritten(RMS, arrays, attrs)


def _values(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@needs_openvino
@pytest.mark.parametrize("case", RMS_CASES, ids=str)
def test_rms_matches_openvinos_cpu_plugin(openvino_results, case):
    assert_matches_openvino(case, openvino_results)


PAGE_CASES = {
    "rank1": ([_values(5)], {"scale": _values(5, seed=1)}),
    "rank2-scale-1-n": ([_values((3, 4))], {"scale": _values((1, 4), seed=1)}),
    "rank3-full-scale": ([_values((2, 3, 4))], {"scale": _values((2, 3, 4), seed=1)}),
    "rank4-scalar-like-scale": ([_values((2, 1, 3, 4))], {"scale": _values(1, seed=1)}),
    "rank5-per-row-scale": ([_values((1, 2, 1, 3, 4))], {"scale": _values((3, 1), seed=1)}),
    "size-0-lead": ([np.zeros((0, 3, 4), np.float32)], {"scale": _values(4)}),
    "size-0-last": ([np.zeros((2, 0), np.float32)], {"scale": np.zeros(0, np.float32)}),
    "inf-nan": ([np.array([[np.inf, 1.0], [np.nan, 2.0], [0.0, 0.0]], np.float32)],
                {"scale": np.array([2.0, 3.0], np.float32)}),
    "no-scale": ([_values((2, 6))], {"scale": None}),
    "no-scale-affine-false": ([_values((2, 6))], {"scale": None, "elementwise_affine": False}),
    "affine-true": ([_values((2, 6))], {"scale": _values(6, seed=1), "elementwise_affine": True}),
    "axis-minus-one": ([_values((2, 6))], {"scale": _values(6, seed=1), "axis": -1}),
    "axis-last": ([_values((2, 3, 6))], {"scale": _values(6, seed=1), "axis": 2}),
    "eps-spelled-eps": ([_values((2, 6))], {"scale": _values(6, seed=1), "eps": 0.25}),
    "eps-zero": ([_values((2, 6))], {"scale": _values(6, seed=1), "epsilon": 0.0}),
    "f64": ([_values((3, 5), np.float64)], {"scale": _values(5, np.float64, seed=1)}),
    "bf16": ([_values((3, 5), BF16)], {"scale": _values(5, BF16, seed=1)}),
    "f16-to-f16": ([_values((3, 5), np.float16)], {"scale": _values(5, np.float16, seed=1), "output_type": "f16"}),
    "f32-to-f16": ([_values((3, 5))], {"scale": _values(5, seed=1), "output_type": "f16"}),
    "bf16-to-f16": ([_values((3, 5), BF16)], {"scale": _values(5, BF16, seed=1), "output_type": "f16"}),
    "undefined": ([_values((3, 5))], {"scale": _values(5, seed=1), "output_type": "undefined"}),
    "dynamic": ([_values((3, 5))], {"scale": _values(5, seed=1), "output_type": "dynamic"}),
}


@pytest.mark.parametrize("name", PAGE_CASES)
def test_rms_matches_the_page(name):
    (data,), attrs = PAGE_CASES[name]
    attrs = dict(attrs)
    scale = attrs.pop("scale")
    eps = attrs.get("epsilon", attrs.get("eps", 1e-6))
    ours = rms([data] if scale is None else [data, scale], **attrs)
    wanted = np.dtype(np.float16) if attrs.get("output_type") == "f16" else data.dtype
    assert ours.dtype == wanted and ours.shape == data.shape
    assert_close(ours, page(data, scale, eps), data.dtype)


LAYER = {"epsilon": "1e-6"}


@pytest.mark.parametrize("attrs, arrays, label", [
    ({}, [np.float32(1), np.float32(1)], "rms-rank"),
    ({}, [_values((2, 4)), _values(3)], "rms-scale-shape"),
    ({}, [_values((2, 4)), _values((2, 2, 4))], "rms-scale-shape"),
    ({"output_type": "f32"}, [_values((2, 4)), _values(4)], "rms-output-type"),
    ({"axis": 0}, [_values((2, 4)), _values(4)], "rms-axis"),
    ({"elementwise_affine": False}, [_values((2, 4)), _values(4)], "rms-affine"),
    ({"elementwise_affine": True}, [_values((2, 4))], "rms-affine"),
    ({}, [np.ones((2, 4), np.int32), np.ones(4, np.int32)], "float-type"),
    ({}, [_values((2, 4)), _values(4, np.float16)], "same-element-type"),
])
def test_rms_refuses(attrs, arrays, label):
    with pytest.raises(IRError) as caught:
        rms(arrays, **attrs)
    assert caught.value.label == label, caught.value


def test_rms_without_epsilon_is_refused():
    with pytest.raises(IRError) as caught:
        make_op(RMS, {"output_type": "f16"})
    assert caught.value.label == "attributes" and "epsilon" in str(caught.value)


def test_an_rms_layer_runs_from_an_ir_file_and_checks_a_scale_its_dynamic_shape_hid(tmp_path):
    """version="ie_internal_opset", as OpenVINO writes the op; a scale whose dims inference could
    not see is refused when the layer runs."""
    data, scale = _values((2, 3, 8)), _values(8, seed=1)
    path = one_layer_ir(tmp_path, "RMS", "ie_internal_opset", LAYER, [("data", data), ("scale", scale)],
                        [((2, 3, 8), np.float32)])
    out = irscatter.read_model(path).run({"data": data, "scale": scale})
    np.testing.assert_allclose(next(iter(out.values())), page(data, scale, 1e-6), rtol=1e-6, atol=1e-6)
    path = one_layer_ir(tmp_path, "RMS", "ie_internal_opset", LAYER, [("data", data), ("scale", scale)],
                        [((2, 3, 8), np.float32)], name="dynamic")
    text = path.read_text().replace('shape="8"', 'shape="?"').replace('names="scale"><dim>8<', 'names="scale"><dim>-1<')
    path.write_text(text.replace('<port id="1" precision="FP32"><dim>8<', '<port id="1" precision="FP32"><dim>-1<'))
    with pytest.raises(IRError) as caught:
        irscatter.read_model(path).run({"data": data, "scale": _values(3)})
    assert caught.value.label == "rms-scale-shape", caught.value
