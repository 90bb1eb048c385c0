"""FakeConvert-13: emulate an 8-bit float type (`destination_type` f8e4m3 or f8e5m2) on f32,
f16 or bf16 data: `y = data * scale - shift`, y rounded to the f8 type and back, then
`(y + shift) / scale`. `shift` defaults to 0; scale and shift broadcast to data by numpy's
rules, and the spec asks shift's shape to match scale's.

The f8 types: f8e4m3 is the "fn" flavour of the FP8 paper (bias 7, no infinities, the
largest finite value 448, NaN only at S.1111.111; ml_dtypes' float8_e4m3fn), f8e5m2 is
IEEE-like (bias 15, largest finite 57344, with inf and NaN; ml_dtypes' float8_e5m2).

The spec defines the middle step as Convert to the f8 type and back, and leaves the rounding
and the overflow rule open. irscatter rounds as both of OpenVINO's implementations do:
  * through f16: y is first rounded to f16 (nearest-even), and that f16 value is rounded to
    the f8 type's precision, nearest-even, subnormals included. So the rounding is a double
    one: 576.24 is 576 in f16, a tie between f8e5m2's 512 and 640 that goes to 512, where a
    direct rounding of 576.24 gives 640.
  * saturating: values beyond the largest finite value (infinities included) become it,
    with their sign (+-448, +-57344), where a plain Convert gives NaN (f8e4m3) or inf.
  * NaN stays NaN. (-0 comes back +0 when shift is 0: -0 + 0 is +0.)
The arithmetic around it runs in f32 for f16 and bf16 data, each of the two steps rounded
once to the data's type (as the reference does; it converts bf16 to f16 for the middle step).

Departures of OpenVINO (checked in the tests):
  * the CPU plugin agrees with the above except for NaN, which it turns into -448 (f8e4m3)
    or -57344 (f8e5m2);
  * the core reference (`emulate_f8e4m3_on_fp16`) departs for f8e4m3: it flushes every
    |y| < 2^-9 to +0 (so values in (2^-10, 2^-9) become 0 instead of 2^-9, and -0 becomes
    +0), it truncates rather than rounds the last bits of subnormals (1.375 * 2^-7 becomes
    1.25 * 2^-7 instead of 1.5 * 2^-7), and it turns NaN into +448. Its f8e5m2 emulation
    agrees with irscatter except on an f16 NaN whose payload lies only in the low 8 bits, which
    it truncates to inf and saturates to 57344 (a NaN from f32 data never has that form).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.ir.broadcast import BroadcastError, broadcast_numpy
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, convert_array, from_compute
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register

# destination_type -> (mantissa bits, smallest normal exponent, largest finite value)
F8_FORMATS = {"f8e4m3": (3, -6, 448.0), "f8e5m2": (2, -14, 57344.0)}
ACCEPTED = (ElementType.f32, ElementType.f16, ElementType.bf16)


def round_to_f8(v: np.ndarray, destination_type: str) -> np.ndarray:
    """f32 values rounded to the f8 type's values (nearest-even, saturating, NaN kept), as f32.

    The f8 spacing at |v| is 2^(max(exponent of v, smallest normal exponent) - mantissa bits);
    v divided by it is exact (a power of two), so `rint` rounds exactly once.
    """
    mbits, e_min, largest = F8_FORMATS[destination_type]
    _, exponent = np.frexp(v)  # v = m * 2^exponent, 0.5 <= |m| < 1
    spacing = np.ldexp(np.float32(1), np.maximum(exponent - 1, e_min) - mbits)
    with np.errstate(invalid="ignore"):
        rounded = np.rint(v / spacing) * spacing
        return np.where(np.abs(rounded) > largest, np.copysign(np.float32(largest), v), rounded).astype(np.float32)


@register("FakeConvert", 13)
class FakeConvert(Op):
    labels = {
        "fc-data-type": "data is not f32, f16 or bf16",
        "fc-shift-shape": "shift's shape differs from scale's",
    }

    class Attrs(OpAttrs):
        destination_type: Annotated[Literal["f8e4m3", "f8e5m2"], Lower]
    attrs: Attrs

    inputs = ("data", "scale", "shift")
    optional_inputs = 1
    elementwise = True

    def infer(self, data: TensorInfo, scale: TensorInfo, shift: TensorInfo | None = None) -> TensorInfo:
        etype = same_element_type(data, scale, "scale must have the element type of data", "same-element-type",
                                  self.port("scale"))
        if shift is not None:
            etype = same_element_type(TensorInfo(etype, data.shape), shift, "shift must have the element type of data",
                                      "same-element-type", self.port("shift"))
        check(etype is ElementType.dynamic or etype in ACCEPTED, "fc-data-type",
              f"FakeConvert takes f32, f16 or bf16 tensors, found {etype}", port=self.port("data"))
        for name, info in (("scale", scale), ("shift", shift)):
            if info is None:
                continue
            try:
                merged = broadcast_numpy(data.shape, info.shape)
            except BroadcastError as e:
                check(False, "broadcast", f"{name} {info.shape} does not broadcast to data {data.shape}: {e}",
                      port=self.port(name))
            if merged.rank_is_static and data.shape.rank_is_static:
                check(merged.rank == data.shape.rank and all(
                    not (m.is_static and d.is_static and m != d) for m, d in zip(merged.ranked_dims, data.shape.ranked_dims)),
                    "broadcast", f"{name} {info.shape} would broadcast data {data.shape} to {merged}",
                    port=self.port(name))
        if shift is not None:
            check(shift.shape.compatible(scale.shape), "fc-shift-shape", f"shift {shift.shape} must have the shape of scale {scale.shape}",
                  port=self.port("shift"))
        return TensorInfo(etype, data.shape)

    def compute(self, data: np.ndarray, scale: np.ndarray, shift: np.ndarray | None = None) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        work = compute_dtype(etype)
        x, s = data.astype(work, copy=False), scale.astype(work, copy=False)
        b = np.zeros((), work) if shift is None else shift.astype(work, copy=False)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            scaled = from_compute(x * s - b, etype)
            # through f16, as OpenVINO's implementations round (see the module doc)
            half = convert_array(scaled.astype(np.float32), ElementType.f32, ElementType.f16).astype(np.float32)
            # every f8 value is exact in f16, bf16 and f32: no rounding back to the data's type
            back = round_to_f8(half, self.attrs.destination_type).astype(work)
            return from_compute((back + b) / s, etype)
