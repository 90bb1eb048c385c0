"""Convolution (domain `ie_internal_opset`): OpenVINO's internal convolution, ConvolutionBiased
under the name it took later. Its page (internal/convolution.rst) is ConvolutionBiased's word
for word but for the name: the same attributes, inputs (data, filters, an optional bias) and
arithmetic, computed here by the same class (`convolution_biased.BiasedConvolution`; see its
docstring for the bias layouts, element types and rounding).

It is a distinct op for a model: a layer `type="Convolution" version="ie_internal_opset"` is
this one, `version="opsetN"` is Convolution-1, which takes no bias. The domain is the one
OpenVINO writes: `ov::op::internal::Convolution` declares
`OPENVINO_OP("Convolution", "ie_internal_opset", ConvolutionFwdPropBase)` in
src/common/transformations/include/ov_ops/convolution.hpp. The pinned 2026.4.1 build does not
hold it (nor ConvolutionBiased).

OpenVINO's last version of the class also writes `groups` (-1: none), `output_type` and
`asymmetric` (zero points, three more inputs), which the page does not describe. They are read
so as never to be misread: a grouped layer (groups > 0), an asymmetric one, or an output_type
other than undefined/dynamic or the type computed is refused rather than computed as the page's
ungrouped convolution.
"""

from __future__ import annotations

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, TensorInfo, check
from irscatter.ops.convolution.core import ConvolutionAttrs
from irscatter.ops.internal.convolution_biased import DOMAIN, BiasedConvolution
from irscatter.ops.internal.rms import OptionalType
from irscatter.ops.registry import register


class InternalConvolutionAttrs(ConvolutionAttrs):
    groups: int = -1
    output_type: OptionalType = ElementType.dynamic
    asymmetric: IRBool = False


@register("Convolution", 1, domain=DOMAIN)
class InternalConvolution(BiasedConvolution):
    labels = {
        "conv-internal-attribute": "the internal Convolution has groups > 0, asymmetric zero points or an "
                                   "output_type other than the one computed (a later OpenVINO version's features, "
                                   "which the page does not describe)",
    }

    Attrs = InternalConvolutionAttrs
    attrs: InternalConvolutionAttrs

    def infer(self, data: TensorInfo, filters: TensorInfo, bias: TensorInfo | None = None) -> TensorInfo:
        a = self.attrs
        check(a.groups <= 0, "conv-internal-attribute",
              f"groups={a.groups}: a grouped internal Convolution is not described by its page", port=self.port("groups"))
        check(not a.asymmetric, "conv-internal-attribute",
              "asymmetric=true (activation and weight zero points) is not described by the page",
              port=self.port("asymmetric"))
        out = super().infer(data, filters, bias)
        check(a.output_type in (ElementType.dynamic, out.etype) or out.etype is ElementType.dynamic,
              "conv-internal-attribute", f"output_type {a.output_type} differs from the type computed, {out.etype}",
              port=self.port("output_type"))
        return out
