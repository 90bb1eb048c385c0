"""GroupConvolution-1: data [N, GROUPS * C_IN, *spatial] split into GROUPS channel groups, each
convolved with its own filters of [GROUPS, C_OUT, C_IN, *kernel], the results concatenated into
[N, GROUPS * C_OUT, *out]. Everything else (padding, element types, integer wrapping, taps in
the padding contributing nothing) is Convolution-1's; see `convolution.py` and `core.py`.
The data's channel count must be exactly GROUPS * C_IN (OpenVINO's inference divides and
truncates; its kernels need the exact product too).
"""

from __future__ import annotations

from irscatter.ops.convolution.core import ForwardConvolution
from irscatter.ops.registry import register


@register("GroupConvolution", 1)
class GroupConvolution(ForwardConvolution):
    grouped = True
