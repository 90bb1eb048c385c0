"""Unique-10: the distinct elements of a tensor (flattened), or with `axis` its distinct slices
along that axis, with four outputs:

0. the unique elements (or slices), ascending when `sorted` (slices compared element by element
   in row-major order), else in the order of their first occurrence;
1. for each, the index of its first occurrence in the input (flattened, or along axis);
2. for each input element (or slice), the position of its value in output 0;
3. for each unique element, how many times it occurs (of `count_element_type`).

Outputs 1 and 2 are of `index_element_type`. The data may be of any numeric or boolean type;
the axis, optional, is an i32 or i64 scalar or 1-element tensor within [-rank, rank-1].

Output 0's size (and 1's and 3's) depends on the values: inference gives [1, n] (or 0 for empty
data) unless it knows the values, when it gives the count.

Choices where the spec is silent (OpenVINO's core reference, from which they come, is named):
* Two elements are the same when they compare equal, as in the reference: -0.0 and 0.0 are one
  value (output 0 holds the first occurrence's), and a NaN equals nothing, so every NaN (every
  slice holding one) is unique on its own, with count 1. With `sorted`, NaN sorts after every
  number, NaNs in input order; the reference's order there depends on its sorting algorithm.
* Empty data gives empty outputs (the reference reads past the end of its empty list; the
  CPU plugin fails). Empty slices (a zero-sized dimension other than axis) are all equal.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import check_axis_input, normalized_axis
from irscatter.ops.registry import register
from irscatter.ops.sorting.core import IndexType, numeric, sort_keys


class UniqueAttrs(OpAttrs):
    sorted: IRBool = True
    index_element_type: IndexType = "i64"
    count_element_type: IndexType = "i64"


def unique(data: np.ndarray, axis: int | None, ordered: bool) -> tuple[np.ndarray, ...]:
    """(unique values, first indices, inverse, counts), the last three int64."""
    n = data.size if axis is None else data.shape[axis]
    if n == 0:
        shape = (0,) if axis is None else data.shape
        empty = np.zeros(0, np.int64)
        return data.reshape(shape), empty, empty, empty
    rows = data.reshape(n, 1) if axis is None else np.moveaxis(data, axis, 0).reshape(n, -1)
    keys = sort_keys(rows)
    if keys.shape[1]:
        order = np.lexsort(keys.T[::-1])  # stable; the first column is the primary key
        in_order = keys[order]
        new = np.any(in_order[1:] != in_order[:-1], axis=1)  # NaN != NaN: every NaN starts a group
    else:
        order, new = np.arange(n), np.zeros(n - 1, bool)
    starts = np.flatnonzero(np.concatenate([[True], new]))
    group = np.cumsum(np.concatenate([[0], new.astype(np.int64)]))
    first = order[starts]  # the stable sort puts each group's first occurrence first
    counts = np.diff(np.append(starts, n))
    inverse = np.empty(n, np.int64)
    inverse[order] = group
    if not ordered:
        by_occurrence = np.argsort(first, kind="stable")
        renumber = np.empty(len(first), np.int64)
        renumber[by_occurrence] = np.arange(len(first))
        first, counts, inverse = first[by_occurrence], counts[by_occurrence], renumber[inverse]
    values = data.reshape(-1)[first] if axis is None else np.take(data, first, axis=axis)
    return values, first.astype(np.int64), inverse, counts.astype(np.int64)


@register("Unique", 10)
class Unique(Op):
    labels = {"unique-type": "Unique takes numeric and boolean data, not strings"}

    Attrs = UniqueAttrs
    attrs: UniqueAttrs
    inputs = ("data", "axis")
    optional_inputs = 1
    outputs = 4

    def infer(self, data: TensorInfo, axis: TensorInfo | None = None) -> tuple[TensorInfo, ...]:
        check(numeric(data.etype) or data.etype is ElementType.boolean, "unique-type",
              f"Unique takes numeric or boolean data, found {data.etype}", port=self.port("data"))
        index = ElementType[self.attrs.index_element_type]
        count = ElementType[self.attrs.count_element_type]
        where: int | None = None
        if axis is not None:
            check_axis_input(axis, self.port("axis"))
            check(axis.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "axis-type",
                  f"the axis must be i32 or i64, found {axis.etype}", port=self.port("axis"))
            if axis.value is None or not data.shape.rank_is_static:
                dims = None if not data.shape.rank_is_static else [-1] * data.shape.rank
                return (TensorInfo(data.etype, PartialShape.of(dims)), TensorInfo(index, PartialShape.of([-1])),
                        TensorInfo(index, PartialShape.of([-1])), TensorInfo(count, PartialShape.of([-1])))
            where = normalized_axis(int(np.asarray(axis.value).reshape(-1)[0]), data.shape.rank,
                                    port=self.port("axis"))
        if data.value is not None:
            out = unique(np.asarray(data.value), where, self.attrs.sorted)
            found = len(out[1])
            return (TensorInfo(data.etype, PartialShape.of(out[0].shape)), TensorInfo(index, PartialShape.of([found])),
                    TensorInfo(index, PartialShape.of([len(out[2])])), TensorInfo(count, PartialShape.of([found])))
        if where is None:
            if data.shape.is_static:
                total = Dimension.static(math.prod(data.shape.to_tuple()))
            else:
                total = Dimension.dynamic()
        else:
            total = data.shape[where]
        found_dim = Dimension(min=min(total.min, 1), max=total.max)
        if where is None:
            first = PartialShape.of([found_dim])
        else:
            first = PartialShape.of([found_dim if i == where else d for i, d in enumerate(data.shape.ranked_dims)])
        return (TensorInfo(data.etype, first), TensorInfo(index, PartialShape.of([found_dim])),
                TensorInfo(index, PartialShape.of([total])), TensorInfo(count, PartialShape.of([found_dim])))

    def compute(self, data: np.ndarray, axis: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        where = None
        if axis is not None:
            where = normalized_axis(int(np.asarray(axis).reshape(-1)[0]), data.ndim, port=self.port("axis"),
                                    at_runtime=True)
        values, first, inverse, counts = unique(data, where, self.attrs.sorted)
        index = ElementType[self.attrs.index_element_type].dtype
        return values, first.astype(index), inverse.astype(index), counts.astype(
            ElementType[self.attrs.count_element_type].dtype)
