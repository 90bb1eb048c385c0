"""Colour-space conversions of camera frames (NV12, I420, RGB, BGR). The YUV <-> RGB arithmetic,
the frame layouts and the shape rules they share are in `core.py`.
"""

from irscatter.ops.image import (  # noqa: F401  (importing a module registers its ops)
    bgr_to_nv12,
    i420_to_bgr,
    i420_to_rgb,
    nv12_to_bgr,
    nv12_to_rgb,
    rgb_to_nv12,
)
