"""Ops that move or reinterpret data without arithmetic: shapes, views, slices and joins.

Their inference computes values whenever the inputs are known, so the ShapeOf chains of a
static model fold into constants and the shape-determining inputs of later ops become known.
"""

from irscatter.ops.movement import (  # noqa: F401  (importing a module registers its ops)
    broadcast,
    concat,
    identity,
    pad,
    reshape,
    reverse,
    reverse_sequence,
    roll,
    shape_of,
    slice,
    split,
    squeeze,
    strided_slice,
    tile,
    transpose,
    unsqueeze,
    variadic_split,
)
