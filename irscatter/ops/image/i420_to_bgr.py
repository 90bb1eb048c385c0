"""I420toBGR-8: I420toRGB-8 with the output channels in the order blue, green, red."""

from __future__ import annotations

from irscatter.ops.image.i420_to_rgb import I420toRGB
from irscatter.ops.registry import register


@register("I420toBGR", 8)
class I420toBGR(I420toRGB):
    bgr = True
