"""Convert-1: element-wise conversion to `destination_type`.

The spec leaves several conversions undefined; irscatter makes one documented choice each:
  * float -> integer: truncation toward zero (as a C++ cast), values past the destination's
    range saturate to its min/max, NaN becomes 0.
  * integer -> narrower or unsigned integer: modulo 2^bits (the spec's rule for negative
    values to unsigned, applied to every integer narrowing), including the sub-byte types.
  * anything -> boolean: non-zero is true (NaN is non-zero).
  * nf4: codes convert to floats through the NF4 level table and floats to the nearest
    level's code; between nf4 and integers the raw code is used, as OpenVINO does.
  * -> bf16: as OpenVINO does it (its reference and CPU plugin agree), which is not IEEE
    round-to-nearest-even: the value goes through f32, keeps its upper 16 bits, and adds one
    only when bit 15 is set and the kept part is odd; the lower 15 bits are ignored. Checked
    bit for bit against OpenVINO 2026.4 on 120,000 values including NaN, inf and subnormals.
  * string converts to nothing and nothing converts to string.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import NF4_LEVELS, ElementType
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register


def convert_array(x: np.ndarray, src: ElementType, dst: ElementType) -> np.ndarray:
    """Convert the values of `x` (held as `src`) to element type `dst`."""
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
        return _to_bf16(x)
    with np.errstate(over="ignore"):  # out-of-range values become inf, as in C++
        return x.astype(dst.dtype)


def _to_bf16(x: np.ndarray) -> np.ndarray:
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
    lo, hi = _int_range(dst)
    t = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
    # float64 cannot hold 2^63-1 or 2^64-1 exactly, so the ends are assigned as integers.
    inside = (t > lo) & (t < hi)
    out = np.where(inside, t, 0).astype(np.int64 if dst.is_signed or dst.bitwidth < 64 else np.uint64)
    out[t >= hi] = hi
    out[t <= lo] = lo
    return _wrap_int(out, dst)


def _wrap_int(x: np.ndarray, dst: ElementType) -> np.ndarray:
    bits = dst.bitwidth
    if bits >= 8 and dst not in (ElementType.u3, ElementType.u6) and dst.dtype.itemsize * 8 == bits:
        return x.astype(dst.dtype)  # numpy's integer casts are modulo 2^bits
    masked = x.astype(np.int64) & ((1 << bits) - 1)
    if dst.is_signed:
        masked = (masked ^ (1 << (bits - 1))) - (1 << (bits - 1))
    return masked.astype(dst.dtype)


def compute_dtype(etype: ElementType) -> np.dtype:
    """The dtype arithmetic on `etype` runs in: f32 for the 16-bit and 8-bit float types."""
    if etype.is_float and etype not in (ElementType.f32, ElementType.f64):
        return np.dtype(np.float32)
    return etype.dtype


def from_compute(result: np.ndarray, etype: ElementType, *, nearest_even: bool = False) -> np.ndarray:
    """Round a result computed in `compute_dtype` back to `etype`: bf16 by OpenVINO's rule,
    or by IEEE round-to-nearest-even for ops of other frameworks (`nearest_even=True`)."""
    if result.dtype == etype.dtype:
        return result
    if nearest_even and etype.is_float:
        with np.errstate(over="ignore"):
            return result.astype(etype.dtype)
    return convert_array(result, ElementType.f32, etype)


@register("Convert", 1)
class Convert(Op):
    class Attrs(OpAttrs):
        destination_type: ElementTypeAttr

    inputs = ("data",)
    elementwise = True

    def infer(self, data: TensorInfo) -> TensorInfo:
        dst = self.attrs.destination_type
        check(dst is not ElementType.dynamic, "destination-type", "destination_type must be a concrete element type")
        check(
            (data.etype is ElementType.string) == (dst is ElementType.string) or data.etype is ElementType.dynamic,
            "no-string-conversion",
            f"cannot convert {data.etype} to {dst}: string tensors convert to and from nothing",
            port="input 0",
        )
        self.src = data.etype
        return TensorInfo(dst, data.shape)

    def compute(self, data: np.ndarray) -> np.ndarray:
        src = self.src if self.src is not ElementType.dynamic else ElementType.from_dtype(data.dtype)
        return convert_array(data, src, self.attrs.destination_type)
