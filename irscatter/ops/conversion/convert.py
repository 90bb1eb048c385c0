"""Convert-1: element-wise conversion to `destination_type`, by the rules of `convert_array`
(`irscatter.ops.common.numeric`), which document every conversion the spec leaves open.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.numeric import check_convertible, convert_array
from irscatter.ops.registry import register


@register("Convert", 1)
class Convert(Op):
    labels = {
        "destination-type": "destination_type is not a concrete element type",
        "convert-range": "strict mode: a float converted to an integer type is NaN or outside the type's range",
    }

    class Attrs(OpAttrs):
        destination_type: ElementTypeAttr
    attrs: Attrs

    inputs = ("data",)
    elementwise = True

    def infer(self, data: TensorInfo) -> TensorInfo:
        dst = self.attrs.destination_type
        check(dst is not ElementType.dynamic, "destination-type", "destination_type must be a concrete element type")
        check_convertible(data.etype, dst, self.port("data"))
        self.src = data.etype
        return TensorInfo(dst, data.shape)

    def compute(self, data: np.ndarray) -> np.ndarray:
        src = self.src if self.src is not ElementType.dynamic else ElementType.from_dtype(data.dtype)
        dst = self.attrs.destination_type
        if src.is_float and dst.is_integral and strict.active():
            self._report_unrepresentable(data, dst)
        return convert_array(data, src, self.attrs.destination_type)

    def _report_unrepresentable(self, data: np.ndarray, dst: ElementType) -> None:
        """Strict mode: floats whose integer part `dst` cannot hold (and NaN), which the spec
        leaves undefined; irscatter saturates them (NaN gives 0), or for a sub-byte type keeps
        their low bits, as OpenVINO does. The bounds are powers of two, exact in every float type."""
        bits = dst.bitwidth
        low, past_high = (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1)) if dst.is_signed else (0.0, 2.0 ** bits)
        whole = np.trunc(data.astype(np.float64))
        kept = ("keeps the low bits of the truncated value, as OpenVINO does (NaN gives 0)" if bits < 8
                else "saturates to the type's range (NaN gives 0)")
        strict.report_values(np.isnan(whole) | (whole < low) | (whole >= past_high), data, label="convert-range",
                             port=self.port("data"), what=f"value outside {dst}",
                             consequence="the spec leaves the result undefined; irscatter " + kept)
