"""Reshape-1: a new shape for the same elements, with `special_zero` (0 copies the input
dimension) and one -1 inferred from the element count.

An input of no elements leaves -1 open: any size holds them. The spec says no more, and this
follows OpenVINO's shape inference: the input dimensions a special zero does not copy are
matched with equal, non-zero pattern values, and -1 is the product of the unmatched input
dimensions over the product of the unmatched pattern values, or 1 when the two are equal.
[0, 5] to [0, -1] with special_zero gives [0, 5]; [0, 3, 4] to [0, -1] without it gives [0, 1].
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import tensor_size_problem
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common.axes import check_1d_integral, int_values
from irscatter.ops.registry import register


class ReshapeAttrs(OpAttrs):
    special_zero: IRBool


def reshape_target(in_shape: tuple[int, ...], pattern: list[int], special_zero: bool) -> tuple[int, ...]:
    """Resolve a Reshape pattern: 0 copies the input dimension (with special_zero), -1 is inferred."""
    out = []
    for i, d in enumerate(pattern):
        if d == 0 and special_zero:
            if i >= len(in_shape):
                raise ValueError(f"pattern position {i} copies an input dimension that does not exist")
            out.append(in_shape[i])
        elif d < -1:
            raise ValueError(f"pattern value {d} is below -1")
        else:
            out.append(d)
    if out.count(-1) > 1:
        raise ValueError("at most one pattern value may be -1")
    total = math.prod(in_shape)
    if -1 in out and total == 0:
        out[out.index(-1)] = _open_dimension(in_shape, pattern, special_zero)
    elif -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or total % known:
            raise ValueError(f"cannot infer the -1 dimension: {total} elements do not divide by {known}")
        out[out.index(-1)] = total // known
    if math.prod(out) != total:
        raise ValueError(f"{list(in_shape)} ({total} elements) cannot be reshaped to {out} ({math.prod(out)} elements)")
    return tuple(out)


def _open_dimension(in_shape: tuple[int, ...], pattern: list[int], special_zero: bool) -> int:
    """The -1 of a pattern for an input of no elements, as OpenVINO's shape inference works it
    out (see the module's docstring)."""
    copied = {i for i, d in enumerate(pattern) if d == 0 and special_zero}
    unmatched = [d for d in pattern if d != -1 and not (d == 0 and special_zero)]
    product = 1
    for i, d in enumerate(in_shape):
        if i in copied:
            continue
        if d != 0 and d in unmatched:
            unmatched.remove(d)
        else:
            product *= d
    rest = math.prod(unmatched)
    if product == rest:
        return 1
    if rest == 0:  # (a pattern value 0 without special_zero: the input has one too, so both are 0)
        raise ValueError(f"cannot infer the -1 dimension of {list(in_shape)} reshaped by {pattern}")
    return product // rest


@register("Reshape", 1)
class Reshape(Op):
    labels = {
        "shape-type": "the shape input is not of an integer type",
        "shape-rank": "the shape input is not a scalar or 1-D",
        "reshape-pattern": "the target shape is malformed or does not hold the input's elements",
    }

    Attrs = ReshapeAttrs
    attrs: ReshapeAttrs
    inputs = ("data", "shape")

    def infer(self, data: TensorInfo, shape: TensorInfo) -> TensorInfo:
        check_1d_integral(shape, "shape", self.port("shape"), type_label="shape-type", rank_label="shape-rank")
        pattern = int_values(shape.value)
        if pattern is None:
            n = shape.shape[0] if shape.shape.rank_is_static and shape.shape.rank == 1 else None
            dims = [-1] * n.min if n is not None and n.is_static else None
            return TensorInfo(data.etype, PartialShape.of(dims))
        if data.shape.is_static:
            try:
                return TensorInfo(data.etype, PartialShape.of(reshape_target(data.shape.to_tuple(), pattern,
                                                                             self.attrs.special_zero)))
            except ValueError as e:
                fail("reshape-pattern", str(e), port=self.port("shape"))
        self._check_pattern(pattern, data.shape.rank if data.shape.rank_is_static else None)
        known = [self._known_dim(data.shape, i, d) for i, d in enumerate(pattern)]
        return TensorInfo(data.etype, PartialShape.of(known))

    def _known_dim(self, shape: PartialShape, i: int, d: int) -> Dimension:
        """What an input of partly known shape tells of output dimension `i` (pattern value `d`)."""
        if d == 0 and self.attrs.special_zero:  # a copy of the input's dimension, when its rank is known
            return shape[i] if shape.rank_is_static and i < shape.rank else Dimension.dynamic()
        return Dimension.dynamic() if d == -1 else Dimension.static(d)

    def _check_pattern(self, pattern: list[int], rank: int | None) -> None:
        """What `reshape_target` refuses that needs no input sizes: for an input of unknown shape."""
        port = self.port("shape")
        check(all(d >= -1 for d in pattern), "reshape-pattern", f"pattern value {min(pattern, default=0)} is below -1",
              port=port)
        check(pattern.count(-1) <= 1, "reshape-pattern", "at most one pattern value may be -1", port=port)
        if self.attrs.special_zero and rank is not None:
            check(all(i < rank for i, d in enumerate(pattern) if d == 0), "reshape-pattern",
                  f"pattern {pattern} copies an input dimension past the input's rank {rank}", port=port)

    def compute(self, data: np.ndarray, shape: np.ndarray) -> np.ndarray:
        try:
            target = reshape_target(data.shape, int_values(shape), self.attrs.special_zero)
        except ValueError as e:
            raise ExecutionError(str(e), port=self.port("shape"), label="reshape-pattern") from None
        # An empty input takes a pattern of any other dims, so many that numpy could not even
        # describe the array: refused in irscatter's words, before numpy's own are raised.
        if (problem := tensor_size_problem(target, data.itemsize)) is not None:
            raise ExecutionError(problem, port=self.port("shape"), label="reshape-pattern")
        return data.reshape(target)
