"""Convolutions: direct, grouped, transposed (backprop data), binary and deformable, for 1-D, 2-D
and 3-D spatial ranks. `kernels` holds the arithmetic the ops share and registers nothing.
"""
