"""The op library. Each module below registers one family of ops; this list is the registry's
table of contents, so that what irscatter supports can be read in one place."""

from irscatter.ops import (  # noqa: F401
    arithmetic,
    conversion,
    gather,
    infrastructure,
    logic,
    matmul,
    reduction,
    scatter,
    shape_ops,
    slicing,
)
