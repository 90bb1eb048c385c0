"""Ops that move blocks of data between the spatial, depth and batch dimensions (DepthToSpace,
SpaceToDepth, BatchToSpace, SpaceToBatch, ShuffleChannels), extract image patches
(ExtractImagePatches) and sum them back into an image (Col2Im).
"""
