"""ConvolutionBiased (domain `ie_internal_opset`): Convolution-1 with an optional bias added to
its result, out = sum of w . x over each window + b.

The domain is the one OpenVINO wrote: `ov::op::internal::ConvolutionBiased`, declared with
`OPENVINO_OP("ConvolutionBiased", "ie_internal_opset", ConvolutionFwdPropBase)` in
src/common/transformations/include/ov_ops/convolution_biased.hpp (OpenVINO 2025), into which
its FuseBias pass folded a Convolution followed by an Add of a constant. OpenVINO later renamed
the class to the internal Convolution (`internal/convolution.py`); the pinned 2026.4.1 build
holds neither, so models carrying them come from the releases between.

The convolution itself is Convolution-1's, computed by the same kernels (`ops/convolution`):
data [N, C_IN, *spatial] with 1 to 3 spatial axes, filters [C_OUT, C_IN, *kernel], strides,
dilations, pads and every auto_pad, taps in the padding contributing nothing, floats summed in
f32 (f64 in f64), integers modulo 2^bits. The bias is added to the sum before its one rounding
(f16, bf16) or wrap (integers), as a plugin that fuses it does. Data, filters and bias share one
numeric type (the page's T).

The bias: the page gives its layout as the output's, [N, C_OUT, *out] (its examples pass the
whole output shape); OpenVINO's FuseBias writes a 1-D [C_OUT] per-channel bias instead. Both
are taken: a bias of the output's rank whose every dimension is the output's or 1 broadcasts
onto it, and a 1-D bias is one value per output channel (a 1-D bias cannot be read as the
page's layout, whose rank is 3 to 5). Any other bias is refused.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import TensorInfo, check
from irscatter.ops.common.types import same_element_type
from irscatter.ops.convolution.core import ForwardConvolution, to_element_type
from irscatter.ops.registry import register

DOMAIN = "ie_internal_opset"


def _fits(bias: tuple[int, ...], out: tuple[int, ...]) -> bool:
    if len(bias) == 1:
        return bias[0] == out[1]
    return len(bias) == len(out) and all(b in (1, o) for b, o in zip(bias, out))


class BiasedConvolution(ForwardConvolution):
    """Convolution-1 plus an optional bias input (see the module doc): the arithmetic of
    ConvolutionBiased and of the internal Convolution that replaced it."""

    labels = {
        "conv-bias-shape": "a biased convolution's bias is neither [C_OUT] nor of the output's rank with each "
                           "dimension the output's or 1",
    }

    inputs = ("data", "filters", "bias")
    optional_inputs = 1
    grouped = False

    def infer(self, data: TensorInfo, filters: TensorInfo, bias: TensorInfo | None = None) -> TensorInfo:
        out = super().infer(data, filters)
        if bias is not None:
            same_element_type(data, bias, "data and bias must have the same element type", "same-element-type",
                              self.port("bias"))
            self._check_bias(out.shape, bias.shape)
        return out

    def _check_bias(self, out: PartialShape, bias: PartialShape) -> None:
        if not bias.rank_is_static:
            return
        if bias.rank == 1:
            channels = out[1] if out.rank_is_static else Dimension.dynamic()
            fits = bias[0].compatible(channels)
        else:
            fits = not out.rank_is_static or (
                bias.rank == out.rank and all(b.contains(1) or b.compatible(o) for b, o in zip(bias.ranked_dims, out.ranked_dims)))
        check(fits, "conv-bias-shape", f"the bias {bias} must be [C_OUT] or broadcast onto the output {out} "
              "(same rank, each dimension the output's or 1)", port=self.port("bias"))

    def compute(self, data: np.ndarray, filters: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        out, plan = self.convolve(data, filters)
        if bias is not None:
            if not _fits(bias.shape, out.shape):  # dims inference could not see
                raise ExecutionError(f"the bias {list(bias.shape)} must be [C_OUT] or broadcast onto the output "
                                     f"{list(out.shape)}", label="conv-bias-shape", port=self.port("bias"))
            shaped = bias.reshape(1, bias.shape[0], *(1,) * (out.ndim - 2)) if bias.ndim == 1 else bias
            with np.errstate(invalid="ignore", over="ignore"):
                out = out + shaped.astype(plan.work, copy=False)
        return to_element_type(out, plan.etype)


@register("ConvolutionBiased", 1, domain=DOMAIN)
class ConvolutionBiased(BiasedConvolution):
    pass
