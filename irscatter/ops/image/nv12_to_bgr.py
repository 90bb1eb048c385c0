"""NV12toBGR-8: NV12toRGB-8 with the output channels in the order blue, green, red."""

from __future__ import annotations

from irscatter.ops.image.nv12_to_rgb import NV12toRGB
from irscatter.ops.registry import register


@register("NV12toBGR", 8)
class NV12toBGR(NV12toRGB):
    bgr = True
