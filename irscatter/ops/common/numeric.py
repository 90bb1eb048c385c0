"""Numeric plumbing shared by kernels: converting arrays between element types (Convert-1's
rules, below), and the compute dtype of the narrow float types.

The spec leaves several conversions undefined; irscatter makes one documented choice each:
  * float -> integer: truncation toward zero (as a C++ cast), values past the destination's
    range saturate to its min/max, NaN becomes 0. To the sub-byte integer types (u1, u2, u3,
    u4, u6, i4) OpenVINO's reference casts to an 8-bit integer and stores the low bits, and its
    CPU plugin computes the same: truncation toward zero, then modulo 2^bits (i4: 8.5 gives -8,
    -9 gives 7; u4: -1 gives 15), with NaN, +-inf and any magnitude of 2^31 or more giving 0
    (the x86 conversion's out-of-range result, whose low bits are 0).
  * integer -> narrower or unsigned integer: modulo 2^bits (the spec's rule for negative
    values to unsigned, applied to every integer narrowing), including the sub-byte types.
  * anything -> boolean: non-zero is true (NaN is non-zero).
  * nf4: codes convert to floats through the NF4 level table and floats to the nearest
    level's code; between nf4 and integers the raw code is used, as OpenVINO does.
  * -> bf16: IEEE round-to-nearest-even through f32, NaN kept a NaN. The spec only says values
    "may be rounded"; nearest-even is the rounding of every other float narrowing, of
    OpenVINO's CPU plugin when it converts at run time, and of the frameworks models come from.
    OpenVINO's core reference rounds differently, and OpenVINO uses it when it folds a Convert
    of constants while compiling a model: it keeps the upper 16 bits of the f32 value and adds
    one only when bit 15 is set and the kept part is odd (so 0.49 becomes 0.48828125, not
    0.49023438), and a NaN whose payload lies in the low bits becomes inf. That rule is
    `bf16_rounding="openvino-fold"` of `convert_array`, checked bit for bit against OpenVINO's
    folding of constants; see the README's departures.
  * string converts to nothing and nothing converts to string.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import NF4_LEVELS, ElementType
from irscatter.ops.base import check


def as_rows(array: np.ndarray, lead: int = 1) -> np.ndarray:
    """`array` seen as a 2-D table: its first `lead` axes are the rows, the rest one row's
    values. Spelled out because `reshape(n, -1)` cannot tell the width of an empty array."""
    return array.reshape(math.prod(array.shape[:lead]), math.prod(array.shape[lead:]))


BF16_ROUNDINGS = ("nearest-even", "openvino-fold")


def convert_array(x: np.ndarray, src: ElementType, dst: ElementType, *,
                  bf16_rounding: str = "nearest-even") -> np.ndarray:
    """Convert the values of `x` (held as `src`) to element type `dst`.

    `bf16_rounding` picks how floats narrow to bf16: `"nearest-even"` (IEEE, the default) or
    `"openvino-fold"` (the rule OpenVINO applies when it folds constants; see the module doc).
    """
    if src is dst:
        return x
    if src is ElementType.nf4 and not dst.is_integral:
        x, src = NF4_LEVELS[x], ElementType.f32
    if dst is ElementType.boolean:
        return x != 0
    if dst is ElementType.nf4:
        if src.is_float:
            levels = NF4_LEVELS.astype(np.float64)
            return np.abs(x.astype(np.float64)[..., None] - levels).argmin(axis=-1).astype(np.uint8)
        return (x.astype(np.int64) & 0xF).astype(np.uint8)
    if dst.is_integral:
        if src.is_float:
            return _float_to_int(x, dst)
        return _wrap_int(x, dst)
    if dst is ElementType.bf16:
        if bf16_rounding == "openvino-fold":
            return _to_bf16_as_openvino_folds(x)
        if bf16_rounding != "nearest-even":
            raise ValueError(f"bf16_rounding must be one of {BF16_ROUNDINGS}, not {bf16_rounding!r}")
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(x, dtype=np.float32).astype(dst.dtype)
    with np.errstate(over="ignore"):  # out-of-range values become inf, as in C++
        return x.astype(dst.dtype)


def _to_bf16_as_openvino_folds(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        # np.require keeps a 0-d array 0-d (ascontiguousarray would make it 1-d)
        bits = np.require(np.asarray(x, dtype=np.float32), requirements="C").view(np.uint32)
    upper = bits >> 16
    rounded = upper + ((bits >> 15) & upper & 1)
    return rounded.astype(np.uint16).view(ElementType.bf16.dtype)


def _int_range(dst: ElementType) -> tuple[int, int]:
    bits = dst.bitwidth
    if dst.is_signed:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _float_to_int(x: np.ndarray, dst: ElementType) -> np.ndarray:
    if dst.bitwidth < 8:
        return _float_to_sub_byte(x, dst)
    lo, hi = _int_range(dst)
    t = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
    # float64 cannot hold 2^63-1 or 2^64-1 exactly, so the ends are assigned as integers.
    inside = (t > lo) & (t < hi)
    out = np.where(inside, t, 0).astype(np.int64 if dst.is_signed or dst.bitwidth < 64 else np.uint64)
    out[t >= hi] = hi
    out[t <= lo] = lo
    return _wrap_int(out, dst)


_INT32_BOUND = 2.0 ** 31


def _float_to_sub_byte(x: np.ndarray, dst: ElementType) -> np.ndarray:
    """Truncated, then the low bits (see the module doc): no saturation."""
    t = np.trunc(x.astype(np.float64))
    t = np.where(np.abs(t) < _INT32_BOUND, t, 0.0)  # NaN fails the test too
    return _wrap_int(t.astype(np.int64), dst)


def _wrap_int(x: np.ndarray, dst: ElementType) -> np.ndarray:
    bits = dst.bitwidth
    if bits >= 8 and dst not in (ElementType.u3, ElementType.u6) and dst.dtype.itemsize * 8 == bits:
        return x.astype(dst.dtype)  # numpy's integer casts are modulo 2^bits
    masked = x.astype(np.int64) & ((1 << bits) - 1)
    if dst.is_signed:
        masked = (masked ^ (1 << (bits - 1))) - (1 << (bits - 1))
    return masked.astype(dst.dtype)


def compute_dtype(etype: ElementType) -> np.dtype:
    """The dtype arithmetic on `etype` runs in: f32 for the 16-bit and 8-bit float types.
    Looked up once per type: small kernels ask on every call."""
    found = _COMPUTE_DTYPES.get(etype)
    if found is None:
        wide = etype.is_float and etype not in (ElementType.f32, ElementType.f64)
        found = _COMPUTE_DTYPES[etype] = np.dtype(np.float32) if wide else etype.dtype
    return found


_COMPUTE_DTYPES: dict[ElementType, np.dtype] = {}


def from_compute(result: np.ndarray, etype: ElementType) -> np.ndarray:
    """Round a result computed in `compute_dtype` back to `etype` (IEEE nearest-even)."""
    if result.dtype == etype.dtype:
        return result
    return convert_array(result, ElementType.f32, etype)


def check_convertible(src: ElementType, dst: ElementType, port: str) -> None:
    """Strings convert to and from nothing; a dynamic type waits."""
    check(src is ElementType.dynamic or dst is ElementType.dynamic
          or (src is ElementType.string) == (dst is ElementType.string),
          "no-string-conversion", f"cannot convert {src} to {dst}: string tensors convert to and from nothing",
          port=port)
