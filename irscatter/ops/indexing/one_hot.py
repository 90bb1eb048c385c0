"""OneHot-1 and OneHot-16: a new axis of size `depth` inserted at `axis` (counted in the output's
rank, negative from the end), holding `on_value` where its position equals the index and
`off_value` elsewhere. Indices at or past depth give a row of off_value.

Indices and depth are i32 or i64 (T1), depth a scalar and on_value, off_value scalars of one
type of any kind (T2, the output's type). The output's size depends on depth's value and goes
through the tensor-size limits.

Negative indices: OneHot-1's spec leaves them undefined; they give a row of off_value, as
OpenVINO (reference and CPU plugin) does, and as OneHot-16's `ignore_negative` mode, its
default, defines. OneHot-16's `normalize` mode maps an index in [-depth, -1] to index + depth;
one below -depth still gives off_value. The spec page spells the default `ignore-negative`,
OpenVINO's IR `ignore_negative`: both are accepted.

Departure from OpenVINO: the spec asks for a positive depth and irscatter refuses 0
(`one-hot-depth`); OpenVINO accepts depth 0 and gives an empty axis.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import BeforeValidator

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.ranges import SMALL_COUNT, Bounds, indices_within, known_value
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register

_INDEX_TYPES = (ElementType.i32, ElementType.i64, ElementType.dynamic)


def _mode_name(value: object) -> object:
    return value.strip().lower().replace("-", "_") if isinstance(value, str) else value


class OneHotAttrs(OpAttrs):
    axis: int


class OneHot16Attrs(OneHotAttrs):
    negative_indices_mode: Annotated[Literal["ignore_negative", "normalize"], BeforeValidator(_mode_name)] = \
        "ignore_negative"


@register("OneHot", 1)
class OneHot(Op):
    labels = {
        "one-hot-depth-type": "depth is not of type i32 or i64",
        "one-hot-depth-shape": "depth is not a scalar",
        "one-hot-depth": "depth is not positive",
    }

    Attrs = OneHotAttrs
    attrs: OneHotAttrs
    inputs = ("indices", "depth", "on_value", "off_value")

    def normalize(self) -> bool:
        return False

    def defines_negative(self) -> bool:
        """Whether the spec says what a negative index gives (OneHot-16's negative_indices_mode)."""
        return False

    def input_range(self, position: int, infos) -> Bounds | None:
        if position == 1:
            return SMALL_COUNT
        return indices_within(known_value(infos[1])) if position == 0 else None

    def infer(self, indices: TensorInfo, depth: TensorInfo, on_value: TensorInfo,
              off_value: TensorInfo) -> TensorInfo:
        check(indices.etype in _INDEX_TYPES, "index-type", f"indices must be i32 or i64, found {indices.etype}",
              port=self.port("indices"))
        check(depth.etype in _INDEX_TYPES, "one-hot-depth-type", f"depth must be i32 or i64, found {depth.etype}",
              port=self.port("depth"))
        check(not depth.shape.rank_is_static or depth.shape.rank == 0, "one-hot-depth-shape",
              f"depth must be a scalar, found shape {depth.shape}", port=self.port("depth"))
        for name, info in (("on_value", on_value), ("off_value", off_value)):
            check(not info.shape.rank_is_static or info.shape.rank == 0, "scalar-input",
                  f"{name} must be a scalar, found shape {info.shape}", port=self.port(name))
        etype = same_element_type(on_value, off_value, "on_value and off_value must share one type",
                                  "same-element-type", self.port("off_value"))
        if not indices.shape.rank_is_static:
            return TensorInfo(etype, PartialShape.dynamic_rank())
        rank = indices.shape.rank
        axis = normalized_axis(self.attrs.axis, rank + 1, port=self.port("axis"))
        size = Dimension.dynamic()
        if depth.value is not None:
            count = int(np.asarray(depth.value).reshape(-1)[0])
            check(count > 0, "one-hot-depth", f"depth must be positive, found {count}", port=self.port("depth"))
            size = Dimension.static(count)
        dims = list(indices.shape.ranked_dims)
        dims.insert(axis, size)
        return TensorInfo(etype, PartialShape.of(dims))

    def compute(self, indices: np.ndarray, depth: np.ndarray, on_value: np.ndarray,
                off_value: np.ndarray) -> np.ndarray:
        count = int(np.asarray(depth).reshape(-1)[0])
        if count <= 0:
            raise ExecutionError(f"depth must be positive, found {count}", port=self.port("depth"),
                                 label="one-hot-depth")
        axis = normalized_axis(self.attrs.axis, indices.ndim + 1, port=self.port("axis"), at_runtime=True)
        shape = indices.shape[:axis] + (count,) + indices.shape[axis:]
        check_allocation(shape, on_value.dtype.itemsize)
        idx = indices.astype(np.int64)
        if not self.defines_negative() and strict.active():
            strict.report_values(idx < 0, idx, label="negative-index", port=self.port("indices"),
                                 what="negative index", consequence="the spec leaves it undefined; irscatter gives "
                                 "a row of off_value, as OpenVINO does")
        if self.normalize():
            idx = np.where((idx < 0) & (idx >= -count), idx + count, idx)
        classes = np.arange(count, dtype=np.int64).reshape((count,) + (1,) * (indices.ndim - axis))
        hit = np.expand_dims(idx, axis) == classes
        return np.where(hit, np.asarray(on_value).reshape(()), np.asarray(off_value).reshape(()))


@register("OneHot", 16)
class OneHot16(OneHot):
    """OneHot-16: `negative_indices_mode`, ignore_negative (OneHot-1's behaviour) or normalize."""

    Attrs = OneHot16Attrs
    attrs: OneHot16Attrs

    def normalize(self) -> bool:
        return self.attrs.negative_indices_mode == "normalize"

    def defines_negative(self) -> bool:
        return True
