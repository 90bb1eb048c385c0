"""Element types: both spellings, packed layouts, and every type as a Const written by OpenVINO."""

import numpy as np
import pytest
from helpers import run_ov, save_ov

import irscatter
from irscatter.ir.element_types import ElementType, decode, decode_strings, encode, encode_strings


@pytest.mark.parametrize(
    "text, expected",
    [("FP32", "f32"), ("f32", "f32"), ("FP16", "f16"), ("BF16", "bf16"), ("I64", "i64"), ("BOOL", "boolean"),
     ("boolean", "boolean"), ("BIN", "u1"), ("U4", "u4"), ("I4", "i4"), ("NF4", "nf4"), ("F8E4M3", "f8e4m3"),
     ("STRING", "string"), ("UNSPECIFIED", "dynamic"), ("u64", "u64")],
)
def test_precision_spellings(text, expected):
    assert ElementType.from_precision(text) is ElementType(expected)


def test_element_type_attribute_accepts_canonical_names_only():
    assert ElementType.from_attribute("F32") is ElementType.f32  # case-insensitive
    with pytest.raises(ValueError, match="FP32"):
        ElementType.from_attribute("FP32")


@pytest.mark.parametrize("etype", [t for t in ElementType if t.is_packed])
def test_packed_round_trip(etype):
    rng = np.random.default_rng(0)
    for count in (1, 7, 8, 9, 33):
        bits = etype.bitwidth
        if etype is ElementType.i4:
            values = rng.integers(-8, 8, count)
        elif etype is ElementType.f4e2m1:
            values = rng.integers(0, 16, count).astype(np.uint8).view(etype.dtype)
        else:
            values = rng.integers(0, 1 << bits, count)
        raw = np.frombuffer(encode(values, etype), np.uint8)
        assert len(raw) == etype.nbytes(count)
        decoded = decode(raw, etype, (count,))
        if etype.is_float and etype is not ElementType.nf4:
            assert decoded.view(np.uint8).tolist() == values.view(np.uint8).tolist()
        else:
            assert decoded.astype(np.int64).tolist() == values.tolist()


def test_layouts_match_openvino_bytes():
    """Byte patterns as OpenVINO 2026.4's serializer writes them (u2 is low-bits-first)."""
    assert encode(np.arange(8), ElementType.u3) == bytes([0b00011011, 0b00011011, 0b00001111])
    assert encode(np.array([1, 2, 3, 63]), ElementType.u6) == bytes([0b00010010, 0b00111111, 0b00000011])
    assert encode(np.array([0, 1, 2, 3, 3]), ElementType.u2) == bytes([0b11100100, 0b00000011])
    assert encode(np.array([1, 0, 1, 1, 0, 0, 0, 0, 1]), ElementType.u1) == bytes([0b10110000, 0b10000000])
    assert encode(np.array([1, 2, 3]), ElementType.u4) == bytes([0b00100001, 0b00000011])


def test_strings_round_trip():
    values = np.array(["", "ab", "x€", "déjà"], dtype=np.dtypes.StringDType())
    raw = np.frombuffer(encode_strings(values), np.uint8)
    assert decode_strings(raw, (2, 2)).reshape(-1).tolist() == values.tolist()


@pytest.mark.parametrize(
    "raw, message",
    [(b"\x02\x00", "at least 4 bytes"), (np.array([3], "<i4").tobytes(), "holds 3 strings"),
     (np.array([2, 0, 1], "<i4").tobytes(), "header needs"),
     (np.array([1, 0, 9], "<i4").tobytes() + b"ab", "offsets"),
     (np.array([1, 0, 1], "<i4").tobytes() + b"\xff", "not valid UTF-8")],
)
def test_malformed_string_tensors(raw, message):
    from irscatter.errors import LoadError

    count = int(np.frombuffer(raw[:4], "<i4")[0]) if len(raw) >= 4 else 1
    shape = (count if "holds" not in message else 2,)
    with pytest.raises(LoadError, match=message):
        decode_strings(np.frombuffer(raw, np.uint8), shape)


def test_byte_aligned_constants_are_views():
    raw = np.arange(16, dtype=np.uint8)
    arr = decode(raw[4:12], ElementType.f32, (2,))
    assert arr.base is not None and np.shares_memory(arr, raw)


ov = pytest.importorskip("openvino")

_FLOATS = [0.5, -1.25, 3.0, 448.0, -0.0, 2.0, 0.09375, -6.0]
_INTS = [1, 0, 5, 3, 2, 7, 6, 4]


def _ov_type(etype: ElementType):
    return getattr(ov.Type, etype.value)


@pytest.mark.parametrize(
    "etype, values",
    [(t, _FLOATS) for t in ("f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2", "f4e2m1")]
    + [("f8e8m0", [0.5, 1.0, 2.0, 4.0, 0.25, 8.0, 1.0, 16.0])]
    + [(t, _INTS) for t in ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "u3", "u4", "u6", "i4")]
    + [("u2", [1, 0, 3, 2, 2, 3, 0, 1]), ("u1", [1, 0, 1, 1, 0, 1, 0, 0]), ("boolean", [1, 0, 1, 1, 0, 1, 0, 0]),
       ("nf4", [0.0, 1.0, -1.0, 0.33, -0.2, 0.5, 0.7, -0.6])],
)
@pytest.mark.parametrize("shape", [(8,), (2, 4), (1, 2, 1, 4)])
def test_every_type_as_a_const_matches_openvino(tmp_path, etype, values, shape):
    """A Const of each type, converted to f32 by a Convert layer: OpenVINO and irscatter agree."""
    import openvino.opset15 as ops

    c = ov.op.Constant(_ov_type(ElementType(etype)), ov.Shape(list(shape)), values)
    out = ops.convert(c, "f32")
    xml = save_ov(ov.Model([ops.result(out)], [], "t"), tmp_path)
    model = irscatter.read_model(xml)
    const = next(layer for layer in model.layers if layer.type == "Const")
    assert const.const_value.shape == shape
    (expected,) = run_ov(xml, {})
    got = model.run({})
    assert np.array_equal(next(iter(got.values())), expected, equal_nan=True)


def test_string_const_round_trip(tmp_path):
    import openvino.opset15 as ops

    words = np.array([["ab", ""], ["xyz", "déjà"]])
    c = ov.op.Constant(ov.Tensor(words))
    xml = save_ov(ov.Model([ops.result(c)], [], "s"), tmp_path)
    model = irscatter.read_model(xml)
    (value,) = model.run({}).values()
    assert value.tolist() == words.tolist()
