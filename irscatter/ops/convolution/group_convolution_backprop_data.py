"""GroupConvolutionBackpropData-1: data [N, GROUPS * C_IN, *in] split into GROUPS channel
groups, each transposed-convolved with its filters of [GROUPS, C_IN, C_OUT, *kernel], the
results concatenated into [N, GROUPS * C_OUT, *out]. The output sizes, the output_shape input
and how it sets the pads (the spec's rule, which departs from OpenVINO for explicit and valid
padding) are ConvolutionBackpropData-1's; see `convolution_backprop_data.py`.

The spec lists the kernel's spatial axes as "X, Y, Z"; they are in the data's order (Z, Y, X),
as in every other convolution, in the spec's own examples and in OpenVINO.
"""

from __future__ import annotations

from irscatter.ops.convolution.core import TransposedConvolution
from irscatter.ops.registry import register


@register("GroupConvolutionBackpropData", 1)
class GroupConvolutionBackpropData(TransposedConvolution):
    grouped = True
