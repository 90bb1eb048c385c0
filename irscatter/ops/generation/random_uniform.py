"""RandomUniform-8: a tensor of the given shape filled with pseudo-random values in [minval, maxval).

The values come from a counter-based generator chosen by `alignment`: Philox 4x32-10 keyed by
global_seed with op_seed as the upper half of the counter ("tensorflow", the default), or
MT19937 seeded with global_seed ("pytorch"); `core.uniform_values` says how words become values
of each output type (f16, bf16, f32, f64, i32, i64). They are bit for bit those of OpenVINO's
core reference, for both alignments and every type.

Choices and departures:
  * Determinism. OpenVINO's RandomUniform keeps a state: each inference after the first
    continues the sequence, and with both seeds 0 it seeds itself from the clock. irscatter's
    op is a pure function: every run gives the values of OpenVINO's *first* inference, and
    seeds 0 and 0 are used as they are (Philox key 0, counter 0; MT19937 seed 0) instead of a
    random seed, so a model gives the same values each time.
  * OpenVINO's CPU plugin departs from its core reference (and from the spec's formulas) in
    several places; irscatter follows the reference: f32 in the plugin is x * range + min
    fused into one rounding (the reference and irscatter round the product, then the sum); the
    plugin makes f16, bf16 and f64 outputs as f32 values converted afterwards (f64 so loses
    the spec's 52-bit mantissa); i64 under "tensorflow" joins the two words in the other
    order; and a full-width integer range (max - min >= 2^31 for i32) breaks its modulo.
    They agree on f32 whenever x * (max - min) is exact (ranges of a power of two), on
    Philox i32 for ranges below 2^31, and on the "pytorch" f32 values.
  * bf16 values round as OpenVINO's bf16 type does in its reference (see `core`).
  * minval must be below maxval (the shape inference's rule, checked on the values as
    doubles); the spec requires it implicitly for the range to exist.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_inferred
from irscatter.ops.base import ElementTypeAttr, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import int_values
from irscatter.ops.common.ranges import SMALL_COUNT, Bounds
from irscatter.ops.common.types import check_integral
from irscatter.ops.generation.core import check_output, uniform_values
from irscatter.ops.registry import register

OUTPUT_TYPES = (ElementType.f16, ElementType.bf16, ElementType.f32, ElementType.f64, ElementType.i32, ElementType.i64)
Seed = Annotated[int, Field(ge=0, le=2**64 - 1)]


class RandomUniformAttrs(OpAttrs):
    output_type: ElementTypeAttr
    global_seed: Seed = 0
    op_seed: Seed = 0
    alignment: Annotated[Literal["tensorflow", "pytorch"], Lower] = "tensorflow"


@register("RandomUniform", 8)
class RandomUniform(Op):
    labels = {
        "shape-rank": "RandomUniform's shape input is not a 1-D tensor",
        "shape-value": "RandomUniform's shape input holds a negative dimension",
        "bounds-type": "minval or maxval is not of the type output_type names",
        "bounds-order": "minval is not below maxval",
    }

    Attrs = RandomUniformAttrs
    attrs: RandomUniformAttrs
    inputs = ("shape", "minval", "maxval")

    def input_range(self, position: int, infos) -> Bounds | None:
        return (SMALL_COUNT, (-3, -1), (1, 3))[position]  # small dims; minval below maxval

    def infer(self, shape: TensorInfo, minval: TensorInfo, maxval: TensorInfo) -> TensorInfo:
        etype = self.attrs.output_type
        check(etype in OUTPUT_TYPES, "output-type",
              f"output_type must be one of {', '.join(map(str, OUTPUT_TYPES))}, found {etype}")
        check_integral(shape, "shape", self.port("shape"), "integer-type")
        check(shape.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "integer-type",
              f"shape must be of type i32 or i64, found {shape.etype}", port=self.port("shape"))
        if shape.shape.rank_is_static:
            check(shape.shape.rank == 1, "shape-rank", f"shape must be a 1-D tensor, found shape {shape.shape}",
                  port=self.port("shape"))
        for name, info in (("minval", minval), ("maxval", maxval)):
            check(info.etype in (etype, ElementType.dynamic), "bounds-type",
                  f"{name} must be of type {etype} (output_type), found {info.etype}", port=self.port(name))
            if info.shape.rank_is_static:
                check(info.shape.rank == 0 or (info.shape.rank == 1 and info.shape[0].contains(1)), "scalar-input",
                      f"{name} must be a scalar or a 1-D tensor of one element, found {info.shape}",
                      port=self.port(name))
        if minval.value is not None and maxval.value is not None:
            low, high = self._bounds(minval.value, maxval.value)
            check(low < high, "bounds-order", f"minval ({low}) must be less than maxval ({high})",
                  port=self.port("maxval"))
        dims = int_values(shape.value)
        if dims is not None:
            check(all(d >= 0 for d in dims), "shape-value", f"shape {dims} has a negative dimension",
                  port=self.port("shape"))
            check_inferred(dims, etype.dtype.itemsize, "output 0")
            return TensorInfo(etype, PartialShape.of(dims))
        if shape.shape.rank_is_static and shape.shape[0].is_static:
            return TensorInfo(etype, PartialShape.of([-1] * int(shape.shape[0])))
        return TensorInfo(etype, PartialShape.dynamic_rank())

    @staticmethod
    def _bounds(minval: np.ndarray, maxval: np.ndarray) -> tuple[float | int, float | int]:
        low, high = (np.asarray(v).reshape(-1)[0] for v in (minval, maxval))
        if np.asarray(minval).dtype.kind in "iu":
            return int(low), int(high)
        return float(low), float(high)

    def compute(self, shape: np.ndarray, minval: np.ndarray, maxval: np.ndarray) -> np.ndarray:
        dims = [int(d) for d in np.asarray(shape).reshape(-1)]
        if any(d < 0 for d in dims):
            raise ExecutionError(f"shape {dims} has a negative dimension", port=self.port("shape"),
                                 label="shape-value")
        etype = self.attrs.output_type
        low, high = self._bounds(minval, maxval)
        if not low < high:
            raise ExecutionError(f"minval ({low}) must be less than maxval ({high})", port=self.port("maxval"),
                                 label="bounds-order")
        check_output(dims, etype.dtype.itemsize)
        count = math.prod(dims)
        a = self.attrs
        values = uniform_values(count, etype, np.asarray(minval).reshape(-1)[0], np.asarray(maxval).reshape(-1)[0],
                                a.global_seed, a.op_seed, a.alignment)
        return values.reshape(dims)
