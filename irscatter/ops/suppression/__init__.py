"""Non-maximum suppression: greedy, soft, rotated, matrix and multi-class NMS.
"""

from irscatter.ops.suppression import (  # noqa: F401  (importing a module registers its ops)
    matrix_nms,
    multiclass_nms,
    nms_rotated,
    non_max_suppression,
)
