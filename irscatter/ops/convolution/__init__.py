"""Convolutions: direct, grouped, transposed (backprop data), binary and deformable, for 1-D, 2-D
and 3-D spatial ranks. `kernels` holds the arithmetic the ops share, `plans` which formulation a
float forward convolution takes per shape; neither registers an op.
"""
