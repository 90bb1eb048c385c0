"""Detection heads: prior boxes, proposals, SSD's detection output, YOLO's region and reorg layers.
"""

from irscatter.ops.detection import (  # noqa: F401  (importing a module registers its ops)
    detection_output,
    generate_proposals,
    prior_box,
    prior_box_clustered,
    proposal,
    region_yolo,
    reorg_yolo,
)
