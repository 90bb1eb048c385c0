"""Resampling: interpolation and grid sampling of images and volumes. `core.py` holds the
coordinate transforms and the per-axis tap tables the Interpolate versions share.
"""

from irscatter.ops.resampling import (  # noqa: F401  (importing a module registers its ops)
    grid_sample,
    interpolate,
)
