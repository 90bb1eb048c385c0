"""GatherElements-6: the element of `data` at each index along `axis` (indices in [-d, d-1],
negatives counting from the end, as OpenVINO's reference does).
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.indices import normalize_indices
from irscatter.ops.common.many_axes import take_along
from irscatter.ops.common.ranges import Bounds, extent, indices_within
from irscatter.ops.registry import register


class GatherElementsAttrs(OpAttrs):
    axis: int


@register("GatherElements", 6)
class GatherElements(Op):
    """out[c] = data[c with c[axis] = indices[c]] (numpy's take_along_axis).

    The spec expects indices in [0, d-1]. A negative index in [-d, -1] counts from the end, as
    OpenVINO's CPU plugin and ONNX's GatherElements (where such models come from) do; OpenVINO's
    core reference refuses negatives instead. Anything outside [-d, d-1] is an error, as in both.
    """

    Attrs = GatherElementsAttrs
    attrs: GatherElementsAttrs
    inputs = ("data", "indices")

    def infer(self, data: TensorInfo, indices: TensorInfo) -> TensorInfo:
        check(indices.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "indices-type",
              f"indices must be i32 or i64, found {indices.etype}", port=self.port("indices"))
        if data.shape.rank_is_static and indices.shape.rank_is_static:
            r = data.shape.rank
            check(r >= 1, "data-rank", "data rank must be at least 1", port=self.port("data"))
            check(indices.shape.rank == r, "indices-rank",
                  f"indices rank must equal data rank, found {indices.shape.rank} and {r}", port=self.port("indices"))
            a = normalized_axis(self.attrs.axis, r, port=self.port("axis"))
            for d in range(r):
                if d != a:
                    check(data.shape[d].compatible(indices.shape[d]), "indices-shape",
                          f"indices dimension {d} ({indices.shape[d]}) must equal data's ({data.shape[d]}) "
                          f"away from the axis", port=self.port("indices"))
        return TensorInfo(data.etype, indices.shape)

    def input_range(self, position: int, infos) -> Bounds | None:
        return indices_within(extent(infos[0], self.attrs.axis)) if position == 1 else None

    def compute(self, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
        a = normalized_axis(self.attrs.axis, data.ndim, port=self.port("axis"), at_runtime=True)
        if indices.ndim != data.ndim or any(n != m for d, (n, m) in enumerate(zip(indices.shape, data.shape)) if d != a):
            raise ExecutionError(f"indices shape {list(indices.shape)} does not fit data shape {list(data.shape)}",
                                 port=self.port("indices"))
        idx = normalize_indices(indices, data.shape[a], allow_negative=True, port=self.port("indices"))
        if strict.active():
            strict.report_values(indices < 0, indices, label="negative-index", port=self.port("indices"),
                                 what="negative index", consequence="the spec expects [0, d-1]; irscatter counts it "
                                 "from the end, as OpenVINO's CPU plugin does (its core reference refuses it)")
        return take_along(data, idx, a)
