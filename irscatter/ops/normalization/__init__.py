"""Normalization over axes: mean-variance, L2, local response, group and batch normalization."""

from irscatter.ops.normalization import (  # noqa: F401  (importing a module registers its ops)
    batch_norm_inference,
    grn,
    group_normalization,
    lrn,
    mvn,
    normalize_l2,
)
