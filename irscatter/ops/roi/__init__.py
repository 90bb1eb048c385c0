"""Region-of-interest pooling: ROIPooling, ROIAlign, rotated ROIAlign, position-sensitive pooling.
"""

from irscatter.ops.roi import (  # noqa: F401  (importing a module registers its ops)
    deformable_psroi_pooling,
    psroi_pooling,
    roi_align,
    roi_align_rotated,
    roi_pooling,
)
