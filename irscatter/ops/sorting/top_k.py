"""TopK-1, TopK-3 and TopK-11: the k largest (`mode` max) or smallest (min) values of each slice
along `axis`, and their indices along that axis (of `index_element_type`, i32 by default).

`sort` orders the k results: `value` by value (descending for max, ascending for min), `index`
by ascending index. Which k elements are chosen, and the order of equal values, is always the
order (value, then lower index first): the spec's `stable` order, which OpenVINO's core
reference gives for every version and setting. So TopK-11's `stable` changes nothing here; it
is only refused with `sort` none, as OpenVINO refuses it. `sort` none, undefined by the spec,
orders by value as `value` does (OpenVINO's CPU plugin does the same; its core reference leaves
the order of std::nth_element).

The versions differ in their inputs only: TopK-1 takes k of type i8, i32 or i64 (OpenVINO's
check; the spec names no type), TopK-3 and -11 any integer type. k is a scalar. The data may be
of any float or integer type (T: any numeric type).

Choices where the spec is silent or says "undefined":
* NaN is greater than every number (as numpy's sort orders it): first for max, last for min;
  NaNs among themselves lower index first. OpenVINO's comparator (a != b ? a > b : index) is
  no ordering once NaN is in a slice, so its core reference and CPU plugin both give orders
  that depend on their sorting algorithms; -0.0 and 0.0 are equal values.
* k = 0 gives an empty axis, the output shape OpenVINO's shape inference gives. (Its core
  reference then returns the whole axis sorted instead, and its CPU plugin refuses k = 0.)
* k larger than the axis, or negative, is refused (`top-k-k-range`): the CPU plugin refuses it
  and the core reference reads past the end of the slice.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.ranges import Bounds, extent, lengths_within
from irscatter.ops.registry import register
from irscatter.ops.sorting.core import IndexType, numeric, sort_keys, up_to

Mode = Annotated[Literal["max", "min"], Lower]
Sort = Annotated[Literal["value", "index", "none"], Lower]


class TopKAttrs(OpAttrs):
    axis: int
    mode: Mode
    sort: Sort
    index_element_type: IndexType = "i32"


class TopK11Attrs(TopKAttrs):
    stable: IRBool = False


def top_k(data: np.ndarray, axis: int, k: int, largest: bool, by_index: bool) -> tuple[np.ndarray, np.ndarray]:
    """The k first elements of each slice along `axis` in the order (value, lower index first),
    descending values when `largest`; then reordered by index when `by_index`. Returns the
    values and their int64 indices."""
    moved = np.moveaxis(data, axis, -1)
    # one row per slice: numpy sorts arrays of at most 32 dimensions
    x = moved.reshape(math.prod(moved.shape[:-1]), moved.shape[-1])
    keys = sort_keys(x)
    n = x.shape[-1]
    if largest:
        # A stable ascending sort of the reversed slice, read backwards: descending values,
        # and among equal values the lower original index first (NaN, sorted last, comes first).
        order = (n - 1) - np.argsort(keys[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    else:
        order = np.argsort(keys, axis=-1, kind="stable")
    chosen = order[..., :k]
    if by_index:
        chosen = np.sort(chosen, axis=-1)
    values = np.take_along_axis(x, chosen, axis=-1)
    shape = (*moved.shape[:-1], chosen.shape[-1])
    return np.moveaxis(values.reshape(shape), -1, axis), np.moveaxis(chosen.reshape(shape), -1, axis)


@register("TopK", 1)
class TopK(Op):
    labels = {
        "top-k-rank": "the data of a TopK is a scalar (it needs an axis)",
        "top-k-k-type": "k is not of an integer type TopK's version takes",
        "top-k-k-shape": "k is not a scalar",
        "top-k-k-range": "k is negative or larger than the data's dimension along axis",
    }

    Attrs = TopKAttrs
    attrs: TopKAttrs
    inputs = ("data", "k")
    outputs = 2
    k_types: tuple[ElementType, ...] | None = (ElementType.i8, ElementType.i32, ElementType.i64)

    def check_k(self, k: TensorInfo) -> None:
        if self.k_types is None:
            ok = k.etype is ElementType.dynamic or k.etype.is_integral
            want = "an integer type"
        else:
            ok = k.etype is ElementType.dynamic or k.etype in self.k_types
            want = ", ".join(map(str, self.k_types))
        check(ok, "top-k-k-type", f"{self.label()} takes k of {want}, found {k.etype}", port=self.port("k"))
        check(not k.shape.rank_is_static or k.shape.rank == 0, "top-k-k-shape",
              f"k must be a scalar, found shape {k.shape}", port=self.port("k"))

    def check_attrs(self) -> None:
        """Attribute combinations a version refuses: none before TopK-11 (which adds `stable`)."""

    def input_range(self, position: int, infos) -> Bounds | None:
        return lengths_within(extent(infos[0], self.attrs.axis)) if position == 1 else None  # k in [1, d]

    def infer(self, data: TensorInfo, k: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        self.check_attrs()
        check(numeric(data.etype), "numeric-type", f"TopK takes numeric data, found {data.etype}",
              port=self.port("data"))
        self.check_k(k)
        index_type = ElementType[self.attrs.index_element_type]
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, data.shape), TensorInfo(index_type, data.shape)
        rank = data.shape.rank
        check(rank > 0, "top-k-rank", "TopK needs data of rank 1 or more, found a scalar", port=self.port("data"))
        axis = normalized_axis(self.attrs.axis, rank, port=self.port("axis"))
        dim = data.shape[axis]
        if k.value is None:
            size = up_to(dim)
        else:
            count = int(np.asarray(k.value).reshape(-1)[0])
            self.check_range(count, dim.max if dim.is_static else None, at_runtime=False)
            size = Dimension.static(count)
        dims = list(data.shape.ranked_dims)
        dims[axis] = size
        shape = PartialShape.of(dims)
        return TensorInfo(data.etype, shape), TensorInfo(index_type, shape)

    def check_range(self, count: int, size: int | None, *, at_runtime: bool) -> None:
        if count >= 0 and (size is None or count <= size):
            return
        message = (f"k = {count} is negative" if count < 0
                   else f"k = {count} is larger than the dimension {size} along axis {self.attrs.axis}")
        if at_runtime:
            raise ExecutionError(message, port=self.port("k"), label="top-k-k-range")
        check(False, "top-k-k-range", message, port=self.port("k"))

    def compute(self, data: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        axis = normalized_axis(self.attrs.axis, data.ndim, port=self.port("axis"), at_runtime=True)
        count = int(np.asarray(k).reshape(-1)[0])
        self.check_range(count, data.shape[axis], at_runtime=True)
        values, indices = top_k(data, axis, count, self.attrs.mode == "max", self.attrs.sort == "index")
        return values, indices.astype(ElementType[self.attrs.index_element_type].dtype)


@register("TopK", 3)
class TopK3(TopK):
    """TopK-3: k of any integer type."""

    k_types = None


@register("TopK", 11)
class TopK11(TopK3):
    """TopK-11: the `stable` attribute (irscatter's order is always the stable one); `stable`
    with `sort` none is refused, as OpenVINO refuses it."""

    labels = {"top-k-stable": "stable is true while sort is none"}

    Attrs = TopK11Attrs
    attrs: TopK11Attrs

    def check_attrs(self) -> None:
        check(not (self.attrs.stable and self.attrs.sort == "none"), "top-k-stable",
              "stable sorting needs sort value or index, found sort none", port=self.port("stable"))
