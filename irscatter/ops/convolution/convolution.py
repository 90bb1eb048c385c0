"""Convolution-1: the cross-correlation of data [N, C_IN, *spatial] with filters
[C_OUT, C_IN, *kernel] over 1, 2 or 3 spatial axes, with strides, dilations and padding
(explicit, valid, same_upper, same_lower). The geometry and the kernel are shared with
GroupConvolution-1 in `core.py` (this is its one-group case).

* Padding adds no values: a kernel tap that falls in the padding contributes nothing, so an
  infinite or NaN weight there does not turn the sum into NaN (the spec says the input is padded
  but not with what; OpenVINO's reference and CPU plugin skip those taps, and so does irscatter).
* Element types: f16, bf16, f32, f64 and the 8- to 64-bit integers. Floats accumulate in f32
  (f64 in f64), f16 and bf16 round once at the end. Integer sums wrap modulo 2^bits, as
  OpenVINO's reference accumulates in the element type; its CPU plugin computes integers in
  floats and saturates instead (an i8 sum of 29300 is 127 there, 116 here).
* same_upper/same_lower give ceil(in / stride) outputs with the total padding
  max(0, (out - 1) * stride + dilated kernel - in) split evenly, the odd one at the end (upper)
  or beginning (lower); explicit and valid need the dilated kernel to fit the padded input.
* Pads of explicit padding must be 0 or more (the spec's range); OpenVINO also accepts negative
  pads, which crop. Empty pads stand for zeros, as in OpenVINO.
"""

from __future__ import annotations

from irscatter.ops.convolution.core import ForwardConvolution
from irscatter.ops.registry import register


@register("Convolution", 1)
class Convolution(ForwardConvolution):
    grouped = False
