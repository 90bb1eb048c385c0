"""Convert-1 from f32 and f16 to the sub-byte integer types against OpenVINO (out of process).

OpenVINO's core reference casts each float to an 8-bit integer and stores its low bits, and its
CPU plugin computes the same: truncation toward zero, then modulo 2^bits, NaN and infinities 0.
irscatter used to saturate as for the byte-wide types, which gave 9 of 25 values otherwise for
i4. The values cover fractions on both sides of 0, the ends of each type's range and past them,
magnitudes past int8 and int32, NaN and the infinities. OpenVINO hands packed outputs back as
their bytes: they are unpacked by irscatter's own reader of packed constants.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import evaluate_reference, layer, net, param, port, result, run_ov, write

import irscatter
from irscatter.ir.element_types import ElementType, decode
from irscatter.ops.common.numeric import convert_array

VALUES = np.array([0.4, 0.6, 1.5, 2.5, -0.4, -0.6, -1.5, -2.5, 3.9, 7.0, 7.9, 8.0, 8.5, 15.0, 15.9, 16.0, 17.0,
                   -8.0, -8.5, -9.0, -16.0, 63.0, 64.0, 65.0, 100.0, -100.0, 255.0, 1000.0, -1000.0, 1e10, -3e9,
                   np.nan, np.inf, -np.inf], np.float32)


def _convert_ir(tmp_path, source: str, destination: ElementType):
    n = len(VALUES)
    src_precision = {"f32": "FP32", "f16": "FP16"}[source]
    layers = [param(0, "x", [n], source, src_precision),
              layer(1, "narrow", "Convert", data={"destination_type": destination.value},
                    inputs=[port(0, src_precision, [n])], outputs=[port(1, destination.precision, [n])]),
              result(2, "out", [n], destination.precision)]
    return write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)]))


def _unpacked(answer: np.ndarray, etype: ElementType) -> np.ndarray:
    """OpenVINO's output: its packed bytes, unpacked (or as it is, when it came unpacked)."""
    if answer.size == len(VALUES):
        return answer.astype(np.int64)
    raw = np.frombuffer(answer.tobytes(), np.uint8)[:math.ceil(len(VALUES) * etype.bitwidth / 8)]
    return decode(raw, etype, (len(VALUES),)).astype(np.int64)


def _fed(source: str) -> np.ndarray:
    with np.errstate(over="ignore"):  # the f32 values past f16's range are f16's infinities
        return VALUES.astype(np.float16 if source == "f16" else np.float32)


@pytest.mark.parametrize("destination", ["i4", "u4"])  # u1, u3, u6 refused, u2 unstable there
@pytest.mark.parametrize("source", ["f32", "f16"])
def test_floats_to_sub_byte_integers_keep_the_low_bits_as_the_cpu_plugin_does(tmp_path, source, destination):
    etype = ElementType(destination)
    feeds = {"x": _fed(source)}
    xml = _convert_ir(tmp_path, source, etype)
    got = irscatter.read_model(xml).run(feeds)["out"]
    assert got.dtype == etype.dtype
    (answer,) = run_ov(xml, feeds)
    np.testing.assert_array_equal(got.astype(np.int64), _unpacked(answer, etype))


@pytest.mark.parametrize("destination", ["i4", "u4", "u1", "u2", "u3", "u6"])
@pytest.mark.parametrize("source", ["f32", "f16"])
def test_floats_to_sub_byte_integers_keep_the_low_bits_as_the_core_reference_does(source, destination):
    """The reference converts a constant (and back to f32, which is exact, to read it unpacked)."""
    ov_ops = pytest.importorskip("openvino.opset15")
    values = _fed(source)
    expected = evaluate_reference(ov_ops.convert(ov_ops.convert(ov_ops.constant(values), destination), "f32"))
    got = convert_array(values, ElementType(source), ElementType(destination))
    np.testing.assert_array_equal(got.astype(np.int64), expected.astype(np.int64))


def test_the_rule_spelled_out_for_i4_and_u4():
    """Truncation toward zero, then modulo 16: no saturation at the ends of the range."""
    values = np.array([1.5, -1.5, 7.9, 8.5, 15.9, 16.0, -9.0, 100.0, np.nan, np.inf], np.float32)
    i4 = convert_array(values, ElementType.f32, ElementType.i4).astype(int).tolist()
    u4 = convert_array(values, ElementType.f32, ElementType.u4).astype(int).tolist()
    assert i4 == [1, -1, 7, -8, -1, 0, 7, 4, 0, 0]
    assert u4 == [1, 15, 7, 8, 15, 0, 7, 4, 0, 0]
