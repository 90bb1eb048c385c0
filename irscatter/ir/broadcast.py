"""Broadcasting of partial shapes, for the IR's `auto_broadcast` modes.

* `none`: both shapes must be equal.
* `numpy`: align at the right; each pair of dimensions must be equal or one of them 1.
* `pdpd`: the second shape is matched against the first starting at `axis` (-1 aligns it at
  the right); each of its dimensions must equal the first's or be 1; the result has the
  first shape.
"""

from __future__ import annotations

from irscatter.ir.shapes import Dimension, PartialShape


class BroadcastError(ValueError):
    """Two shapes do not broadcast under the requested mode."""


def _merge_pair(a: Dimension, b: Dimension) -> Dimension:
    one = Dimension.static(1)
    if a == one:
        return b
    if b == one:
        return a
    if a.is_static and b.is_static:
        if a.min != b.min:
            raise BroadcastError(f"dimensions {a} and {b} are neither equal nor 1")
        return a
    if a.is_static:  # b dynamic: it must be 1 or a
        if not (b.contains(1) or b.contains(a.min)):
            raise BroadcastError(f"dimensions {a} and {b} cannot broadcast")
        return a
    if b.is_static:
        return _merge_pair(b, a)
    return Dimension.dynamic()


def broadcast_numpy(a: PartialShape, b: PartialShape) -> PartialShape:
    if a.dims is None or b.dims is None:
        return PartialShape.dynamic_rank()
    if a == b and a.is_static:  # the common case: nothing to broadcast
        return a
    n = max(len(a.dims), len(b.dims))
    one = Dimension.static(1)
    da = (one,) * (n - len(a.dims)) + a.dims
    db = (one,) * (n - len(b.dims)) + b.dims
    return PartialShape.of(_merge_pair(x, y) for x, y in zip(da, db))


def broadcast_none(a: PartialShape, b: PartialShape) -> PartialShape:
    if a.dims is None:
        return b
    if b.dims is None:
        return a
    if not a.compatible(b):
        raise BroadcastError(f"shapes {a} and {b} must be equal (auto_broadcast=none)")
    return PartialShape.of(x if x.is_static else y for x, y in zip(a.dims, b.dims))


def pdpd_axis(a_rank: int, b_rank: int, axis: int) -> int:
    start = a_rank - b_rank if axis == -1 else axis
    if start < 0 or start + b_rank > a_rank:
        raise BroadcastError(f"a rank-{b_rank} tensor cannot be placed at axis {axis} of a rank-{a_rank} one")
    return start


def broadcast_pdpd(a: PartialShape, b: PartialShape, axis: int) -> PartialShape:
    if a.dims is None or b.dims is None:
        return a
    dims = list(b.dims)
    start = pdpd_axis(len(a.dims), len(dims), axis)
    for i, d in enumerate(dims):
        target = a.dims[start + i]
        if d != Dimension.static(1) and not d.compatible(target):
            raise BroadcastError(f"dimension {d} at position {i} does not match {target} (auto_broadcast=pdpd)")
    return a


def broadcast(mode: str, a: PartialShape, b: PartialShape, axis: int = -1) -> PartialShape:
    if mode == "numpy":
        return broadcast_numpy(a, b)
    if mode == "none":
        return broadcast_none(a, b)
    return broadcast_pdpd(a, b, axis)
