"""The op library. Each module below registers one family of ops; this list is the registry's
table of contents, so that what irscatter supports can be read in one place."""

from irscatter.ops import (  # noqa: F401
    arithmetic,
    bnns,
    conversion,
    gather,
    infrastructure,
    logic,
    matmul,
    paddle,
    paged,
    reduction,
    scatter,
    shape_ops,
    slicing,
    stablehlo,
)

# The irscatter1 opset's function forms: numpy arrays in, numpy arrays out.
from irscatter.ops.bnns import bnns_scatter
from irscatter.ops.paddle import paddle_scatter
from irscatter.ops.paged import paged_scatter_update
from irscatter.ops.stablehlo import hlo_scatter

__all__ = ["bnns_scatter", "hlo_scatter", "paddle_scatter", "paged_scatter_update"]
