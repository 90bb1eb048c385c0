"""PaddleScatter-1 (irscatter1): `paddle.scatter`, row scatter along the first axis.

`x` has any rank >= 1, `index` is 1-D (i32 or i64) and `updates` is
`[len(index)] + x.shape[1:]`; `updates[i]` goes to row `index[i]` of `x`.

* overwrite=true: rows are written in index order, so the last write to a row wins.
* overwrite=false: every indexed row is first set to zero, then all updates aimed at it are
  summed into it; rows that are not indexed keep their values from `x`.

Indices must lie in [0, x.shape[0] - 1], as Paddle's kernels enforce; anything else is an
error naming the value and its position. Paddle accepts an `updates` with more rows than
`index` has entries; irscatter requires exactly one row per index, as the seed document
describes. f16/bf16 sums are accumulated in f32 and rounded once, to nearest-even.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.indices import normalize_indices
from irscatter.ops.common.numeric import as_rows, compute_dtype, from_compute
from irscatter.ops.common.types import require_shape, same_element_type
from irscatter.ops.functional import call
from irscatter.ops.registry import register
from irscatter.ops.scatter.core import scatter_rows

DOMAIN = "irscatter"


class PaddleAttrs(OpAttrs):
    overwrite: IRBool = True


@register("PaddleScatter", 1, domain=DOMAIN)
class PaddleScatter(Op):
    """out = x; out[index[i]] = updates[i] (overwrite) or zero-then-sum (accumulate)."""

    labels = {
        "x-type": "x has an element type the op does not take",
        "x-rank": "x is a scalar",
    }

    Attrs = PaddleAttrs
    attrs: PaddleAttrs
    inputs = ("x", "index", "updates")
    inplace_input = 0

    def infer(self, x: TensorInfo, index: TensorInfo, updates: TensorInfo) -> TensorInfo:
        etype = same_element_type(updates, x, "updates must have the element type of x", "updates-type", self.port("updates"))
        check(etype not in (ElementType.boolean, ElementType.string), "x-type",
              f"x must be numeric, found {etype}", port=self.port("x"))
        check(index.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "index-type",
              f"index must be i32 or i64, found {index.etype}", port=self.port("index"))
        if index.shape.rank_is_static:
            check(index.shape.rank == 1, "index-rank", f"index must be 1-D, found shape {index.shape}",
                  port=self.port("index"))
        if x.shape.rank_is_static:
            check(x.shape.rank >= 1, "x-rank", "x must have rank at least 1", port=self.port("x"))
            if index.shape.rank_is_static:
                expected = PartialShape.of(index.shape.ranked_dims + x.shape.ranked_dims[1:])
                check(expected.compatible(updates.shape), "updates-shape",
                      f"updates shape {updates.shape} must be [len(index)] + x.shape[1:] = {expected}",
                      port=self.port("updates"))
        return TensorInfo(etype, x.shape)

    def compute(self, x: np.ndarray, index: np.ndarray, updates: np.ndarray, *, inplace: bool = False) -> np.ndarray:
        require_shape(updates.shape, index.shape + x.shape[1:], "updates", self.port("updates"))
        rows = normalize_indices(index, x.shape[0], allow_negative=False, port=self.port("index"))
        etype = ElementType.from_dtype(x.dtype)
        out = output_buffer(x, compute_dtype(etype), inplace=inplace)
        out2d = as_rows(out)
        upd2d = as_rows(updates).astype(out.dtype, copy=False)
        if self.attrs.overwrite:
            scatter_rows(out2d, rows, upd2d, "none")
        else:
            scatter_rows(out2d, rows, upd2d, "sum", use_init_val=False)
        return from_compute(out, etype)


def paddle_scatter(x, index, updates, overwrite: bool = True) -> np.ndarray:
    """`paddle.scatter(x, index, updates, overwrite)` on numpy arrays (inputs untouched)."""
    return call(PaddleScatter, (x, index, updates), {"overwrite": overwrite})
