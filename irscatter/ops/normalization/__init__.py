"""Normalization over axes: mean-variance, L2, local response, group and batch normalization."""
