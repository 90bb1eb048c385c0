"""Ops that move blocks of data between the spatial, depth and batch dimensions (DepthToSpace,
SpaceToDepth, BatchToSpace, SpaceToBatch, ShuffleChannels), extract image patches
(ExtractImagePatches) and sum them back into an image (Col2Im).
"""

from irscatter.ops.spatial import (  # noqa: F401  (importing a module registers its ops)
    batch_to_space,
    col2_im,
    depth_to_space,
    extract_image_patches,
    shuffle_channels,
    space_to_batch,
    space_to_depth,
)
