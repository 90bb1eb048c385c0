"""RMS (domain `ie_internal_opset`): root-mean-square normalization over the last axis,
(x / sqrt(mean(x^2 over the last axis) + epsilon)) * scale.

The domain is the one OpenVINO writes: the class is `ov::op::internal::RMS`, declared with
`OPENVINO_OP("RMS", "ie_internal_opset")` in src/common/transformations/include/ov_ops/rms.hpp.
OpenVINO's RMSFusion turns the decomposed RMSNorm of LLMs (Power, ReduceMean, Add, Sqrt, Divide,
Multiply by the gain) into it; the CPU and GPU plugins run it fused.

* data is any float type of rank 1 or more; scale has data's type and broadcasts (numpy rules,
  aligned at the right) to data's shape without widening it: [N], [1, N], data's own shape.
* f16 and bf16 compute in f32, f64 in f64; epsilon is taken in that type; the output is rounded
  once, to `output_type` ("f16") or, when it is "undefined" (the page's and older OpenVINO's
  spelling) or "dynamic" (newer OpenVINO's), to data's type. The page allows no other output type.
* Edge values follow IEEE arithmetic, as OpenVINO's CPU plugin computes them (it squares and
  sums in f32 too): a NaN makes its row NaN; a row holding inf, or whose squares overflow, gives
  0 at its finite elements (x / inf) and NaN at the infinite ones (inf / inf).

Where the page and OpenVINO differ:
* The page's example writes the attribute as `eps`; its attribute list and OpenVINO say
  `epsilon`. Both are read (`epsilon` wins when a layer has both).
* OpenVINO also writes an RMS without scale (one input, `elementwise_affine="false"`: the
  normalized values as they are) and, in its newest sources, an `axis` attribute (-1). The one-input form is
  computed with scale 1; `elementwise_affine` must then agree with the input count. Any axis but
  the last is refused: the page normalizes over the last axis only.
"""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import AliasChoices, BeforeValidator, Field

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, convert_array
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.registry import register

DOMAIN = "ie_internal_opset"


def _optional_type(value: Any) -> Any:
    """An element type attribute where "undefined" (OpenVINO before 2025) means dynamic."""
    if isinstance(value, str):
        text = value.strip().lower()
        return ElementType.dynamic if text == "undefined" else ElementType.from_attribute(text)
    return value


OptionalType = Annotated[ElementType, BeforeValidator(_optional_type)]


def rms_normalize(x: np.ndarray, epsilon: float) -> np.ndarray:
    """x / sqrt(mean(x^2 over the last axis) + epsilon), in x's dtype (a float compute dtype)."""
    count = x.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        # sum / count rather than np.mean, which warns on an empty last axis
        mean_square = np.add.reduce(x * x, axis=-1, keepdims=True) / x.dtype.type(count)
        return x / np.sqrt(mean_square + x.dtype.type(epsilon))


def _fits(scale: tuple[int, ...], data: tuple[int, ...]) -> bool:
    """Whether `scale` broadcasts to `data` (aligned at the right) without widening it."""
    return len(scale) <= len(data) and all(s in (1, d) for s, d in zip(reversed(scale), reversed(data)))


class RMSAttrs(OpAttrs):
    epsilon: float = Field(validation_alias=AliasChoices("epsilon", "eps"))
    output_type: OptionalType = ElementType.dynamic
    elementwise_affine: IRBool | None = None
    axis: int = -1


@register("RMS", 1, domain=DOMAIN)
class RMS(Op):
    """RMSNorm over the last axis, times a scale that broadcasts to the data."""

    labels = {
        "rms-rank": "RMS's data is a scalar: it has no last axis to normalize over",
        "rms-scale-shape": "RMS's scale does not broadcast to data's shape without widening it",
        "rms-output-type": "RMS's output_type is neither f16 nor undefined/dynamic",
        "rms-axis": "RMS's axis is not data's last axis (the page normalizes over the last axis only)",
        "rms-affine": "RMS's elementwise_affine disagrees with whether a scale input is given",
    }

    Attrs = RMSAttrs
    attrs: RMSAttrs
    inputs = ("data", "scale")
    optional_inputs = 1

    def infer(self, data: TensorInfo, scale: TensorInfo | None = None) -> TensorInfo:
        a = self.attrs
        check(a.output_type in (ElementType.dynamic, ElementType.f16), "rms-output-type",
              f"output_type must be f16 or undefined, found {a.output_type}", port=self.port("output_type"))
        if a.elementwise_affine is not None:
            check(a.elementwise_affine == (scale is not None), "rms-affine",
                  f"elementwise_affine={str(a.elementwise_affine).lower()} but the layer has "
                  f"{'a' if scale is not None else 'no'} scale input", port=self.port("elementwise_affine"))
        check_float(self, data.etype)
        if scale is not None:
            same_element_type(data, scale, "data and scale must have the same element type", "same-element-type",
                              self.port("scale"))
        shape = data.shape
        if shape.rank_is_static:
            check(shape.rank >= 1, "rms-rank", "data must have rank 1 or more (RMS normalizes over its last axis)",
                  port=self.port("data"))
            check(a.axis in (-1, shape.rank - 1), "rms-axis",
                  f"axis {a.axis} is not the last axis of data {shape}: RMS normalizes over the last axis only",
                  port=self.port("axis"))
            if scale is not None:
                self._check_scale(shape, scale.shape)
        etype = data.etype if a.output_type is ElementType.dynamic else a.output_type
        return TensorInfo(etype, shape)

    def _check_scale(self, data: PartialShape, scale: PartialShape) -> None:
        if not scale.rank_is_static:
            return
        fits = scale.rank <= data.rank and all(
            s.contains(1) or s.compatible(d) for s, d in zip(reversed(scale.ranked_dims), reversed(data.ranked_dims)))
        check(fits, "rms-scale-shape", f"scale {scale} does not broadcast to data {data}", port=self.port("scale"))

    def compute(self, data: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        work = compute_dtype(etype)
        out = rms_normalize(data.astype(work, copy=False), self.attrs.epsilon)
        if scale is not None:
            if not _fits(scale.shape, data.shape):  # dims inference could not see
                raise ExecutionError(f"scale {list(scale.shape)} does not broadcast to data {list(data.shape)}",
                                     label="rms-scale-shape", port=self.port("scale"))
            with np.errstate(invalid="ignore", over="ignore"):
                out = out * scale.astype(work, copy=False)
        target = etype if self.attrs.output_type is ElementType.dynamic else self.attrs.output_type
        return convert_array(out, ElementType.from_dtype(out.dtype), target)
