"""The ExperimentalDetectron ops of Mask R-CNN exports: priors, proposals, feature extraction,
top-k ROIs and the detection output.
"""

from irscatter.ops.detectron import (  # noqa: F401  (importing a module registers its ops)
    experimental_detectron_detection_output,
    experimental_detectron_generate_proposals_single_image,
    experimental_detectron_prior_grid_generator,
    experimental_detectron_roi_feature_extractor,
    experimental_detectron_top_k_rois,
)
