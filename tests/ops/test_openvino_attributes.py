"""Every enum attribute value of irscatter's ops, as OpenVINO's serializer writes it, loads.

OpenVINO's enums can name one value twice (explicit broadcasting is both `none` and `explicit`)
and its serializer writes whichever name its table lists first, so what a converted model says
is not always what the spec page says. Each op is built with OpenVINO's Python API for every
value of its enum attributes, saved as IR, and must validate with no error.
"""

import numpy as np
import pytest
from helpers import ov_model_of, save_ov

import irscatter

ov = pytest.importorskip("openvino")
import openvino.opset1 as o1  # noqa: E402
import openvino.opset3 as o3  # noqa: E402
import openvino.opset12 as o12  # noqa: E402
import openvino.opset15 as o15  # noqa: E402


def _f32(shape, name):
    return o15.parameter(shape, ov.Type.f32, name=name)


def _i64(values):
    return o15.constant(np.array(values, np.int64))


CASES = {
    "broadcast1-numpy": lambda: o1.broadcast(_f32([3], "x"), _i64([2, 3]), mode="numpy"),
    "broadcast1-explicit": lambda: o1.broadcast(_f32([3], "x"), _i64([3, 2]), _i64([0]), mode="explicit"),
    "broadcast3-numpy": lambda: o3.broadcast(_f32([3], "x"), _i64([2, 3]), broadcast_spec="NUMPY"),
    "broadcast3-explicit": lambda: o3.broadcast(_f32([3], "x"), _i64([3, 2]), _i64([0]), broadcast_spec="EXPLICIT"),
    "broadcast3-bidirectional": lambda: o3.broadcast(_f32([3, 1], "x"), _i64([1, 4]), broadcast_spec="BIDIRECTIONAL"),
    "add-none": lambda: o15.add(_f32([2], "a"), _f32([2], "b"), auto_broadcast="none"),
    "add-numpy": lambda: o15.add(_f32([2], "a"), _f32([2, 2], "b"), auto_broadcast="numpy"),
    "shapeof3-i32": lambda: o3.shape_of(_f32([2, 3], "x"), output_type="i32"),
    "shapeof3-i64": lambda: o3.shape_of(_f32([2, 3], "x"), output_type="i64"),
    **{f"elements12-{r}": (lambda r=r: o12.scatter_elements_update(
        _f32([4], "d"), _i64([1, 1]), _f32([2], "u"), _i64(0), reduction=r))
       for r in ("none", "sum", "prod", "min", "max", "mean")},
    **{f"nd15-{r}": (lambda r=r: o15.scatter_nd_update(_f32([4], "d"), _i64([[1], [1]]), _f32([2], "u"), reduction=r))
       for r in ("none", "sum", "sub", "prod", "min", "max")},
    **{f"convert-{t}": (lambda t=t: o15.convert(_f32([2], "x"), t))
       for t in ("f64", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "boolean", "f8e4m3",
                 "f8e5m2", "u4", "i4", "u1", "nf4", "f4e2m1")},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_openvino_written_enum_values_load(tmp_path, name):
    xml = save_ov(ov_model_of([CASES[name]()], name), tmp_path)
    report = irscatter.validate(xml)
    assert report.errors == [], [f.message for f in report.errors]


def test_broadcast1_explicit_is_written_as_none_and_runs(tmp_path):
    xml = save_ov(ov_model_of([CASES["broadcast1-explicit"]()]), tmp_path)
    assert 'mode="none"' in xml.read_text()
    (out,) = irscatter.read_model(xml).run({"x": np.array([1, 2, 3], np.float32)}).values()
    assert out.tolist() == [[1, 1], [2, 2], [3, 3]]
