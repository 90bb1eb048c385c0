"""ConvolutionBackpropData-1, the transposed convolution: every element of data
[N, C_IN, *in] scatters its products with filters [C_IN, C_OUT, *kernel] onto the output
[N, C_OUT, *out] at position i * stride + k * dilation - pads_begin (input position i, kernel
offset k); what falls outside [0, out) is cropped, and outputs nothing reaches are 0.

The output's spatial sizes:

* Without output_shape: stride * (in - 1) + dilated kernel - pads_begin - pads_end +
  output_padding, where the pads are the attributes for explicit and zeros for valid,
  same_upper and same_lower (the spec's "if auto_pads != None" rule; "None" is its name for the
  default, explicit).
* With output_shape: its values. By the spec, pads_begin and pads_end are then ignored and the
  total padding stride * (in - 1) + dilated kernel - output_shape + output_padding is split with
  the larger half at the beginning for same_upper and at the end for every other auto_pad.
  OpenVINO splits it so for same_upper and same_lower only: with explicit it keeps the
  pads_begin attribute, and with valid it crops nothing at the beginning. irscatter follows the
  spec, so an explicit pads_begin other than total // 2, or valid with an output_shape smaller
  than the full result, gives a result shifted against OpenVINO's.
* An empty input axis gives stride * (0 - 1) + dilated kernel - pads + output_padding outputs
  (often 0), all zeros; OpenVINO takes 0 - 1 as 0 there.
* An output_shape larger than the full result (a negative total) crops nothing at the
  beginning and leaves zeros at the end, as in OpenVINO: the spec's formula would give
  negative pads there, which it does not define.

Element types, accumulation and integer wrapping are Convolution-1's (see `convolution.py`);
the kernel (`kernels.grouped_transposed`) is one matrix product per kernel offset added onto a
strided box of the output, so the zeros that a strided formulation inserts between inputs are
never multiplied (an infinite weight gives inf, not NaN, there), as OpenVINO's CPU plugin does.
"""

from __future__ import annotations

from irscatter.ops.convolution.core import TransposedConvolution
from irscatter.ops.registry import register


@register("ConvolutionBackpropData", 1)
class ConvolutionBackpropData(TransposedConvolution):
    grouped = False
