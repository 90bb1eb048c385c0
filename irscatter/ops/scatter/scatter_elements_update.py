"""ScatterElementsUpdate-3 and -12: each element of `updates` goes to the position of its own
index along `axis`; -12 adds `reduction` and `use_init_val` and allows negative indices.
See `irscatter.ops.scatter` for the index ranges and `scatter.core` for the reductions.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.axes import check_axis_input, constant_axis, normalized_axis, runtime_axis
from irscatter.ops.common.indices import check_indices
from irscatter.ops.common.numeric import from_compute
from irscatter.ops.common.ranges import Bounds, indices_along
from irscatter.ops.common.types import check_integral, require_shape, same_element_type
from irscatter.ops.registry import register
from irscatter.ops.scatter.core import (
    ReductionAttribute,
    flat_rows_along_axis,
    report_duplicate_rows,
    scatter_along_axis,
)


class ElementsAttrs12(OpAttrs):
    reduction: Annotated[Literal["none", "sum", "prod", "min", "max", "mean"], Lower] = "none"
    use_init_val: IRBool = True


@register("ScatterElementsUpdate", 3)
class ScatterElementsUpdate3(Op):
    """Element-wise scatter along `axis`: out[c with c[axis] = indices[c]] = updates[c]."""

    labels = {
        "indices-extent": "an indices dimension exceeds the data's away from the axis",
    }

    inputs = ("data", "indices", "updates", "axis")
    inplace_input = 0
    allow_negative: ClassVar[bool] = False

    @property
    def reduction(self) -> str:  # version 3 has no attributes: it always replaces
        return "none"

    @property
    def use_init_val(self) -> bool:
        return True

    def infer(self, data: TensorInfo, indices: TensorInfo, updates: TensorInfo, axis: TensorInfo) -> TensorInfo:
        check_integral(indices, "indices", self.port("indices"), "indices-type")
        same_element_type(updates, data, "updates must have the element type of data", "updates-type", self.port("updates"))
        check_axis_input(axis, self.port("axis"))
        check(not (self.reduction == "mean" and data.etype is ElementType.boolean), "mean-boolean",
              "the 'mean' reduction is not defined for boolean tensors")
        if data.shape.rank_is_static and indices.shape.rank_is_static:
            check(data.shape.rank == indices.shape.rank, "indices-rank",
                  f"indices rank must equal data rank, found {indices.shape.rank} and {data.shape.rank}", port=self.port("indices"))
        check(indices.shape.compatible(updates.shape), "updates-shape",
              f"updates shape {updates.shape} must equal indices shape {indices.shape}", port=self.port("updates"))
        a = constant_axis(axis)
        if a is not None and data.shape.rank_is_static:
            a = normalized_axis(a, data.shape.rank, port=self.port("axis"))
            if indices.shape.rank_is_static:
                for d, (i_dim, d_dim) in enumerate(zip(indices.shape, data.shape)):
                    if d != a and i_dim.is_static and d_dim.is_static:
                        check(i_dim.min <= d_dim.min, "indices-extent",
                              f"indices dimension {d} ({i_dim}) must not exceed data dimension {d} ({d_dim}) "
                              f"away from the axis", port=self.port("indices"))
        return TensorInfo(data.etype, data.shape)

    def input_range(self, position: int, infos) -> Bounds | None:
        return indices_along(infos[0], infos[3]) if position == 1 else None

    def compute(self, data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: np.ndarray, *,
                inplace: bool = False) -> np.ndarray:
        a = runtime_axis(axis, data.ndim, self.port("axis"))
        require_shape(updates.shape, indices.shape, "updates", self.port("updates"))
        if indices.ndim != data.ndim or any(n > m for d, (n, m) in enumerate(zip(indices.shape, data.shape)) if d != a):
            raise ExecutionError(f"indices shape {list(indices.shape)} does not fit data shape {list(data.shape)}", port=self.port("indices"))
        idx, lowest, highest = check_indices(indices, data.shape[a], allow_negative=self.allow_negative,
                                             port=self.port("indices"))
        etype = ElementType.from_dtype(data.dtype)
        wrap = lowest < 0
        if self.reduction == "none" and strict.active():
            wrapped = np.where(idx < 0, idx + data.shape[a], idx) if wrap else idx
            report_duplicate_rows(flat_rows_along_axis(wrapped, data.shape, a), indices.shape, data.shape, 0,
                                  port=self.port("indices"))
        out = scatter_along_axis(data, idx, updates, a, self.reduction, etype, inplace=inplace,
                                 use_init_val=self.use_init_val, wrap_negative=wrap, incomparable="update",
                                 reach=(lowest, highest))
        return from_compute(out, etype)


@register("ScatterElementsUpdate", 12)
class ScatterElementsUpdate12(ReductionAttribute, ScatterElementsUpdate3):
    Attrs = ElementsAttrs12
    attrs: ElementsAttrs12
    allow_negative = True

    @property
    def use_init_val(self) -> bool:
        return self.attrs.use_init_val
