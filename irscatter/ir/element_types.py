"""The IR's element types, their two spellings, numpy storage, and the `.bin` byte layouts.

Two vocabularies exist in IR files: `<data element_type=...>` uses the canonical lower-case
names only, while `<port precision=...>` also accepts the legacy upper-case spellings
(`FP32`, `I64`, `BOOL`, `BIN`, ...). Types numpy lacks come from `ml_dtypes`; the few that
ml_dtypes lacks too (u3, u6, nf4 codes) are held as uint8, one value per byte.

Sub-byte layouts, as OpenVINO writes them (checked against its serializer in the tests):
  * u1: eight values per byte, element 0 in the most significant bit.
  * u2: four values per byte, element 0 in the least significant bits.
  * u4, i4, nf4, f4e2m1: two values per byte, element 0 in the low nibble.
  * u3: groups of 8 values in 3 bytes; bytes 0-1 hold the low 2 bits of each value,
    byte 2 the high bit, every field most-significant first.
  * u6: groups of 4 values in 3 bytes; bytes 0-1 hold the low 4 bits, byte 2 the high
    2 bits, every field most-significant first.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from irscatter.errors import LoadError


@dataclass(frozen=True)
class _Info:
    bits: int
    kind: str  # "float", "int", "uint", "bool", "string", "none"
    dtype: np.dtype | None
    precision: str  # the upper-case spelling OpenVINO's serializer writes


class ElementType(str, enum.Enum):
    """An IR element type; the value is the canonical `element_type` spelling."""

    boolean = "boolean"
    bf16 = "bf16"
    f16 = "f16"
    f32 = "f32"
    f64 = "f64"
    f8e4m3 = "f8e4m3"
    f8e5m2 = "f8e5m2"
    f8e8m0 = "f8e8m0"
    f4e2m1 = "f4e2m1"
    nf4 = "nf4"
    i4 = "i4"
    i8 = "i8"
    i16 = "i16"
    i32 = "i32"
    i64 = "i64"
    u1 = "u1"
    u2 = "u2"
    u3 = "u3"
    u4 = "u4"
    u6 = "u6"
    u8 = "u8"
    u16 = "u16"
    u32 = "u32"
    u64 = "u64"
    string = "string"
    dynamic = "dynamic"

    # --- parsing --------------------------------------------------------------------------

    @classmethod
    def from_attribute(cls, text: str) -> ElementType:
        """Parse a `<data element_type=...>` value: canonical names only, any letter case."""
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise ValueError(
                f'"{text}" is not an element type (expected one of {", ".join(_CANONICAL)})'
            ) from None

    @classmethod
    def from_precision(cls, text: str) -> ElementType:
        """Parse a port `precision`: canonical names or the legacy upper-case spellings."""
        key = text.strip()
        found = _PRECISION_ALIASES.get(key) or _PRECISION_ALIASES.get(key.lower())
        if found is None:
            raise ValueError(f'"{text}" is not a port precision')
        return found

    @classmethod
    def from_dtype(cls, dtype: np.dtype) -> ElementType:
        """The natural element type of a numpy dtype (uint8 maps to u8, never to u3/u6/nf4)."""
        found = _FROM_DTYPE.get(np.dtype(dtype))
        if found is None:
            if np.dtype(dtype).kind in "OTU":
                return cls.string
            raise ValueError(f"no IR element type for numpy dtype {np.dtype(dtype)}")
        return found

    # --- properties -----------------------------------------------------------------------

    @property
    def _info(self) -> _Info:
        return _INFO[self]

    @property
    def bitwidth(self) -> int:
        return self._info.bits

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype irscatter uses to hold values of this type."""
        dt = self._info.dtype
        if dt is None:
            raise ValueError(f"element type {self.value} has no numpy storage")
        return dt

    @property
    def precision(self) -> str:
        return self._info.precision

    @property
    def is_float(self) -> bool:
        return self._info.kind == "float"

    @property
    def is_integral(self) -> bool:
        """Integer types (signed or not), booleans excluded, as OpenVINO's `integral_number`."""
        return self._info.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self._info.kind in ("int", "float")

    @property
    def is_packed(self) -> bool:
        """Stored in the `.bin` with more than one value per byte."""
        return 0 < self._info.bits < 8

    def nbytes(self, count: int) -> int:
        """Bytes that `count` values of this type occupy in a `.bin` (strings excluded)."""
        group = _THREE_BYTE_GROUPS.get(self)
        if group is not None:
            return 3 * math.ceil(count / group)
        return math.ceil(count * _BITS[self] / 8)

    def __str__(self) -> str:
        return self.value


_I = _Info
_INFO: dict[ElementType, _Info] = {
    ElementType.boolean: _I(8, "bool", np.dtype(np.bool_), "BOOL"),
    ElementType.bf16: _I(16, "float", np.dtype(ml_dtypes.bfloat16), "BF16"),
    ElementType.f16: _I(16, "float", np.dtype(np.float16), "FP16"),
    ElementType.f32: _I(32, "float", np.dtype(np.float32), "FP32"),
    ElementType.f64: _I(64, "float", np.dtype(np.float64), "FP64"),
    ElementType.f8e4m3: _I(8, "float", np.dtype(ml_dtypes.float8_e4m3fn), "F8E4M3"),
    ElementType.f8e5m2: _I(8, "float", np.dtype(ml_dtypes.float8_e5m2), "F8E5M2"),
    ElementType.f8e8m0: _I(8, "float", np.dtype(ml_dtypes.float8_e8m0fnu), "F8E8M0"),
    ElementType.f4e2m1: _I(4, "float", np.dtype(ml_dtypes.float4_e2m1fn), "F4E2M1"),
    ElementType.nf4: _I(4, "float", np.dtype(np.uint8), "NF4"),
    ElementType.i4: _I(4, "int", np.dtype(ml_dtypes.int4), "I4"),
    ElementType.i8: _I(8, "int", np.dtype(np.int8), "I8"),
    ElementType.i16: _I(16, "int", np.dtype(np.int16), "I16"),
    ElementType.i32: _I(32, "int", np.dtype(np.int32), "I32"),
    ElementType.i64: _I(64, "int", np.dtype(np.int64), "I64"),
    ElementType.u1: _I(1, "uint", np.dtype(ml_dtypes.uint1), "BIN"),
    ElementType.u2: _I(2, "uint", np.dtype(ml_dtypes.uint2), "U2"),
    ElementType.u3: _I(3, "uint", np.dtype(np.uint8), "U3"),
    ElementType.u4: _I(4, "uint", np.dtype(ml_dtypes.uint4), "U4"),
    ElementType.u6: _I(6, "uint", np.dtype(np.uint8), "U6"),
    ElementType.u8: _I(8, "uint", np.dtype(np.uint8), "U8"),
    ElementType.u16: _I(16, "uint", np.dtype(np.uint16), "U16"),
    ElementType.u32: _I(32, "uint", np.dtype(np.uint32), "U32"),
    ElementType.u64: _I(64, "uint", np.dtype(np.uint64), "U64"),
    ElementType.string: _I(8, "string", np.dtypes.StringDType(), "STRING"),
    ElementType.dynamic: _I(0, "none", None, "UNSPECIFIED"),
}
# Asked for every Const when a model compiles (`nbytes`): looked up, not worked out each time.
_BITS = {etype: info.bits for etype, info in _INFO.items()}
# u3 and u6 values go in groups of 8 and 4 to three bytes.
_THREE_BYTE_GROUPS = {ElementType.u3: 8, ElementType.u6: 4}

_CANONICAL = [t.value for t in ElementType]

_PRECISION_ALIASES: dict[str, ElementType] = {t.value: t for t in ElementType}
_PRECISION_ALIASES.update({_INFO[t].precision: t for t in ElementType})
_PRECISION_ALIASES.update(
    {
        "bool": ElementType.boolean,
        "bin": ElementType.u1,
        "u1": ElementType.u1,
        "fp16": ElementType.f16,
        "fp32": ElementType.f32,
        "fp64": ElementType.f64,
        "undefined": ElementType.dynamic,
        "unspecified": ElementType.dynamic,
    }
)
for _t in ElementType:  # legacy spellings in upper case too: I64, U8, ...
    _PRECISION_ALIASES.setdefault(_t.value.upper(), _t)

_FROM_DTYPE: dict[np.dtype, ElementType] = {}
for _t in ElementType:
    _dt = _INFO[_t].dtype
    if _dt is not None and _dt not in _FROM_DTYPE and _t not in (ElementType.u3, ElementType.u6,
                                                                  ElementType.nf4):
        _FROM_DTYPE[_dt] = _t
_FROM_DTYPE[np.dtype(np.uint8)] = ElementType.u8

# NF4 code -> value table (QLoRA's normal-float 4-bit levels, as OpenVINO's ConvertNF4 uses).
NF4_LEVELS = np.array(
    [
        -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
        -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
        0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
        0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
    ],
    dtype=np.float32,
)


# --- decoding `.bin` bytes ------------------------------------------------------------------


def _bits_msb_first(raw: np.ndarray, width: int) -> np.ndarray:
    """Split each byte into 8/width fields of `width` bits, most significant field first."""
    return _fields(raw, width, range(8 - width, -1, -width))


def _bits_lsb_first(raw: np.ndarray, width: int) -> np.ndarray:
    return _fields(raw, width, range(0, 8, width))


def _fields(raw: np.ndarray, width: int, shifts: range) -> np.ndarray:
    """The fields of `width` bits at `shifts` of each byte, a byte's fields in that order: one
    pass over the bytes a field (a broadcast over the fields would loop over a handful of
    elements per byte)."""
    out = np.empty((len(raw), len(shifts)), np.uint8)
    mask = np.uint8((1 << width) - 1)
    for column, shift in enumerate(shifts):
        np.bitwise_and(raw >> np.uint8(shift), mask, out=out[:, column])
    return out.reshape(-1)


def _split_bit_groups(raw: np.ndarray, low_width: int, count: int) -> np.ndarray:
    """u3/u6: each 3-byte group holds the low bits in bytes 0-1 and the high bits in byte 2."""
    groups = raw.reshape(-1, 3)
    low = _bits_msb_first(groups[:, :2].reshape(-1), low_width).reshape(len(groups), -1)
    high = _bits_msb_first(groups[:, 2].copy(), 8 // low.shape[1]).reshape(len(groups), -1)
    return ((high << low_width) | low).reshape(-1)[:count]


def decode(raw: np.ndarray, etype: ElementType, shape: tuple[int, ...]) -> np.ndarray:
    """Turn `raw` (a uint8 view of exactly the bytes needed) into an array of `shape`.

    Byte-aligned types are returned as zero-copy views of `raw`; packed types are unpacked
    into a new array with one value per element.
    """
    count = math.prod(shape)
    if etype is ElementType.string:
        return decode_strings(raw, shape)
    if count == 0:  # no bytes to split into fields (nor to view: the packed dtypes may be a byte wide)
        return np.zeros(shape, etype.dtype)
    if not etype.is_packed:
        return raw.view(etype.dtype).reshape(shape)
    if etype is ElementType.u1:
        codes = _bits_msb_first(raw, 1)[:count]
    elif etype is ElementType.u2:
        codes = _bits_lsb_first(raw, 2)[:count]
    elif etype is ElementType.u3:
        codes = _split_bit_groups(raw, 2, count)
    elif etype is ElementType.u6:
        codes = _split_bit_groups(raw, 4, count)
    else:  # nibble types: u4, i4, nf4, f4e2m1
        codes = _bits_lsb_first(raw, 4)[:count]
        if etype is ElementType.i4:
            codes = ((codes.astype(np.int8) ^ 8) - 8).astype(np.int8)
        elif etype is ElementType.f4e2m1:
            return codes.astype(np.uint8).view(etype.dtype).reshape(shape)  # bit pattern, not a number
    return codes.astype(etype.dtype).reshape(shape)


def encode(values: np.ndarray, etype: ElementType) -> bytes:
    """The `.bin` bytes of `values` as element type `etype` (the inverse of `decode`)."""
    if etype is ElementType.string:
        return encode_strings(values)
    arr = np.asarray(values)
    if not etype.is_packed:
        return np.ascontiguousarray(arr.astype(etype.dtype)).tobytes()
    if etype is ElementType.f4e2m1:
        arr = arr.astype(etype.dtype).view(np.uint8)
    codes = np.ascontiguousarray(arr.reshape(-1).astype(np.int64) & ((1 << etype.bitwidth) - 1))
    codes = codes.astype(np.uint8)
    if etype in (ElementType.u3, ElementType.u6):
        group = 8 if etype is ElementType.u3 else 4
        low_width = 2 if etype is ElementType.u3 else 4
        padded = np.zeros(math.ceil(len(codes) / group) * group, np.uint8)
        padded[: len(codes)] = codes
        g = padded.reshape(-1, group)
        low = _pack_msb_first(g & ((1 << low_width) - 1), low_width).reshape(-1, 2)
        high = _pack_msb_first(g >> low_width, etype.bitwidth - low_width).reshape(-1, 1)
        return np.concatenate([low, high], axis=1).tobytes()
    if etype is ElementType.u1:
        return _pack_msb_first(codes, 1).tobytes()
    return _pack_lsb_first(codes, etype.bitwidth).tobytes()


def _pack_msb_first(codes: np.ndarray, width: int) -> np.ndarray:
    per = 8 // width
    flat = codes.reshape(-1)
    padded = np.zeros(math.ceil(len(flat) / per) * per, np.uint8)
    padded[: len(flat)] = flat
    shifts = np.arange(8 - width, -1, -width, dtype=np.uint8)
    return np.bitwise_or.reduce(padded.reshape(-1, per) << shifts, axis=1).astype(np.uint8)


def _pack_lsb_first(codes: np.ndarray, width: int) -> np.ndarray:
    per = 8 // width
    padded = np.zeros(math.ceil(len(codes) / per) * per, np.uint8)
    padded[: len(codes)] = codes
    shifts = np.arange(0, 8, width, dtype=np.uint8)
    return np.bitwise_or.reduce(padded.reshape(-1, per) << shifts, axis=1).astype(np.uint8)


# --- packed string tensors ------------------------------------------------------------------


def decode_strings(raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A packed string tensor: int32 count N, N+1 int32 end offsets (first 0), then the bytes.

    Strings must be valid UTF-8 (numpy's string dtype holds text, not bytes); anything else
    is a LoadError naming the element.
    """
    buf = bytes(raw)
    if len(buf) < 4:
        raise LoadError(f"packed string tensor needs at least 4 bytes, got {len(buf)}", label="const-strings")
    count = int(np.frombuffer(buf, "<i4", 1)[0])
    expected = math.prod(shape)
    if count != expected:
        raise LoadError(f"packed string tensor holds {count} strings but the shape needs {expected}",
                        label="const-strings")
    header = 4 + 4 * (count + 1) if count else 4
    if len(buf) < header:
        raise LoadError(f"packed string tensor header needs {header} bytes, got {len(buf)}", label="const-strings")
    if count == 0:
        return np.empty(shape, dtype=np.dtypes.StringDType())
    offsets = np.frombuffer(buf, "<i4", count + 1, 4).astype(np.int64)
    body = buf[header:]
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0) or offsets[-1] > len(body):
        raise LoadError("packed string tensor has offsets that are not increasing within its size",
                        label="const-strings")
    items = []
    for i in range(count):
        try:
            items.append(body[offsets[i] : offsets[i + 1]].decode("utf-8"))
        except UnicodeDecodeError as e:
            raise LoadError(f"string element {i} is not valid UTF-8 ({e.reason})", label="string-utf8") from None
    return np.array(items, dtype=np.dtypes.StringDType()).reshape(shape)


def encode_strings(values: np.ndarray) -> bytes:
    items = [
        s.encode("utf-8") if isinstance(s, str) else bytes(s)
        for s in np.asarray(values, dtype=object).reshape(-1)
    ]
    offsets = np.zeros(len(items) + 1, "<i4")
    offsets[1:] = np.cumsum([len(b) for b in items]) if items else []
    head = np.array([len(items)], "<i4").tobytes()
    return head + (offsets.tobytes() if items else b"") + b"".join(items)
