"""ConvertPromoteTypes-14: both inputs converted to one common element type, chosen from
their two types (and, with `pytorch_scalar_promotion`, their ranks), by Convert-1's rules.

The common type (`common_type`), in the order the spec and OpenVINO's reference decide it:
  * equal types: that type; a boolean with any type: the other type.
  * a float and an integer: the float; unless `promote_unsafe`, refused when the float has
    fewer than twice the integer's bits (f16 with i8 passes, f16 with i16 does not).
  * both floats or both integers, with `pytorch_scalar_promotion` and exactly one of them a
    scalar (rank 0): the other input's type. Unless `promote_unsafe`, refused when that type
    cannot hold the scalar's: of the same signedness it needs at least the scalar's bits,
    signed against an unsigned scalar at least half of them; an unsigned target never holds
    a signed scalar. A dynamic rank leaves the common type dynamic.
  * a signed and an unsigned integer: the signed integer of max(2 * unsigned bits, signed
    bits) bits (i4, i8, i16, i32, else i64) when the unsigned has 32 bits or fewer and
    either `promote_unsafe` or the signed one already has twice the unsigned's bits;
    otherwise (u64, or a widening) `u64_integer_promotion_target` if `promote_unsafe`, else
    refused. So (u64, i8) is f32 by default, and (u8, i8) is i16 only when unsafe.
  * the same kind and signedness with different bits: the wider one.
  * the same bits but different types, only with `promote_unsafe`: f8e4m3 with f8e5m2 gives
    f16, f16 with bf16 gives f32; otherwise refused.
The types taken are boolean, f16, bf16, f32, f64, f8e4m3, f8e5m2, i4, i8, i16, i32, i64, u1,
u4, u8, u16, u32, u64 (OpenVINO's list); the others are refused.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ValidationError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import ElementTypeAttr, IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import convert_array
from irscatter.ops.registry import register

E = ElementType
SUPPORTED = frozenset({E.boolean, E.f16, E.bf16, E.f32, E.f64, E.f8e4m3, E.f8e5m2, E.i4, E.i8, E.i16, E.i32,
                       E.i64, E.u1, E.u4, E.u8, E.u16, E.u32, E.u64})
_SIGNED_BY_BITS = {4: E.i4, 8: E.i8, 16: E.i16, 32: E.i32}


def common_type(a: ElementType, b: ElementType, rank_a: int | None, rank_b: int | None, *, promote_unsafe: bool,
                pytorch_scalar_promotion: bool, u64_integer_promotion_target: ElementType) -> ElementType:
    """The type both inputs convert to (ranks: None when dynamic); a ValidationError labelled
    `promote-types` when the attributes forbid the promotion."""
    def refuse(why: str) -> ElementType:
        raise ValidationError(f"{a} and {b} cannot be promoted: {why}", label="promote-types")

    if E.dynamic in (a, b):
        return E.dynamic
    if a is b:
        return a
    if a is E.boolean or b is E.boolean:
        return b if a is E.boolean else a
    if a.is_float != b.is_float:
        real, integer = (a, b) if a.is_float else (b, a)
        if not promote_unsafe and real.bitwidth < 2 * integer.bitwidth:
            refuse(f"{real} has fewer than twice the bits of {integer} (promote_unsafe allows it)")
        return real
    if pytorch_scalar_promotion:
        if rank_a is None or rank_b is None:
            return E.dynamic
        if (rank_a == 0) != (rank_b == 0):
            target, scalar = (b, a) if rank_a == 0 else (a, b)
            safe = ((target.is_signed == scalar.is_signed and target.bitwidth >= scalar.bitwidth)
                    or (target.is_signed and not scalar.is_signed and 2 * target.bitwidth >= scalar.bitwidth))
            if not promote_unsafe and not safe:
                refuse(f"the tensor's {target} cannot hold the scalar's {scalar} (promote_unsafe allows it)")
            return target
    if a.is_signed != b.is_signed:
        unsigned, signed = (a, b) if b.is_signed else (b, a)
        if unsigned.bitwidth <= 32 and (promote_unsafe or 2 * unsigned.bitwidth <= signed.bitwidth):
            return _SIGNED_BY_BITS.get(max(2 * unsigned.bitwidth, signed.bitwidth), E.i64)
        if not promote_unsafe:
            refuse(f"no signed integer type holds every {unsigned} and {signed} value without widening "
                   "(promote_unsafe allows it)")
        return u64_integer_promotion_target
    if a.bitwidth != b.bitwidth:
        return a if a.bitwidth > b.bitwidth else b
    if promote_unsafe:
        if {a, b} == {E.f8e4m3, E.f8e5m2}:
            return E.f16
        if {a, b} == {E.f16, E.bf16}:
            return E.f32
    return refuse("no common type under these attributes")


@register("ConvertPromoteTypes", 14)
class ConvertPromoteTypes(Op):
    labels = {
        "promote-types": "the two element types have no common type under the attributes",
        "promote-unsupported": "an input's element type is not one the op promotes",
    }

    class Attrs(OpAttrs):
        promote_unsafe: IRBool = False
        pytorch_scalar_promotion: IRBool = False
        u64_integer_promotion_target: ElementTypeAttr = E.f32
    attrs: Attrs

    inputs = ("input_0", "input_1")
    outputs = 2

    def infer(self, a: TensorInfo, b: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        for name, info in (("input_0", a), ("input_1", b)):
            check(info.etype is E.dynamic or info.etype in SUPPORTED, "promote-unsupported",
                  f"ConvertPromoteTypes does not take {info.etype}", port=self.port(name))
        target = self.attrs.u64_integer_promotion_target
        check(target not in (E.string, E.dynamic), "output-type",
              f"u64_integer_promotion_target must be a concrete non-string type, found {target}",
              port=self.port("u64_integer_promotion_target"))
        self.common = self._common(a.etype, b.etype, a.shape.rank if a.shape.rank_is_static else None,
                                   b.shape.rank if b.shape.rank_is_static else None)
        self.types = (a.etype, b.etype)
        return TensorInfo(self.common, a.shape), TensorInfo(self.common, b.shape)

    def _common(self, a: ElementType, b: ElementType, rank_a: int | None, rank_b: int | None) -> ElementType:
        try:
            return common_type(a, b, rank_a, rank_b, **self.attrs.model_dump())
        except ValidationError as e:
            raise ValidationError(e.message, label=e.label, port=self.port("input_1")) from None

    def compute(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        type_a, type_b = (t if t is not E.dynamic else E.from_dtype(x.dtype) for t, x in zip(self.types, (a, b)))
        common = self.common
        if common is E.dynamic:
            common = self._common(type_a, type_b, a.ndim, b.ndim)
        out_a, out_b = (convert_array(x, t, common) for x, t in ((a, type_a), (b, type_b)))
        return (out_a.copy() if out_a is a else out_a), (out_b.copy() if out_b is b else out_b)
