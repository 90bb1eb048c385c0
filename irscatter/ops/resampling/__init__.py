"""Resampling: interpolation and grid sampling of images and volumes. `core.py` holds the
coordinate transforms and the per-axis tap tables the Interpolate versions share.
"""
