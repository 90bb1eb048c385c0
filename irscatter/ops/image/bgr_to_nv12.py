"""BGRtoNV12-17: RGBtoNV12-17 for an image whose channels are in the order blue, green, red."""

from __future__ import annotations

from irscatter.ops.image.rgb_to_nv12 import RGBtoNV12
from irscatter.ops.registry import register


@register("BGRtoNV12", 17)
class BGRtoNV12(RGBtoNV12):
    bgr = True
