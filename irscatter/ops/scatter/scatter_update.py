"""ScatterUpdate-3: whole slices of `updates` written into `data` along `axis`.

Indices lie in [0, d-1] (the spec; OpenVINO's reference leaves negatives unchecked). A
duplicate index: the last write in row-major order wins. See `irscatter.ops.scatter`.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.axes import check_axis_input, constant_axis, normalized_axis, runtime_axis
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.indices import normalize_indices
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.ranges import Bounds, indices_along
from irscatter.ops.common.types import check_integral, require_shape, same_element_type
from irscatter.ops.registry import register
from irscatter.ops.scatter.core import last_occurrence, report_duplicate_slices, shape_text


@register("ScatterUpdate", 3)
class ScatterUpdate(Op):
    """Writes slices of `updates` into `data` at `indices` along `axis`."""

    inputs = ("data", "indices", "updates", "axis")
    inplace_input = 0

    def infer(self, data: TensorInfo, indices: TensorInfo, updates: TensorInfo, axis: TensorInfo) -> TensorInfo:
        check_integral(indices, "indices", self.port("indices"), "indices-type")
        same_element_type(updates, data, "updates must have the element type of data", "updates-type", self.port("updates"))
        check_axis_input(axis, self.port("axis"))
        if data.shape.rank_is_static and indices.shape.rank_is_static and updates.shape.rank_is_static:
            r, q, u = data.shape.rank, indices.shape.rank, updates.shape.rank
            check(u == r + q - 1, "updates-rank",
                  f"updates rank must be rank(indices) + rank(data) - 1 = {q} + {r} - 1 = {q + r - 1}, found {u}",
                  port=self.port("updates"))
            a = constant_axis(axis)
            if a is not None:
                a = normalized_axis(a, r, port=self.port("axis"))
                expected = data.shape.ranked_dims[:a] + indices.shape.ranked_dims + data.shape.ranked_dims[a + 1:]
                check(PartialShape.of(expected).compatible(updates.shape), "updates-shape",
                      f"updates shape {updates.shape} must be data.shape[:axis] + indices.shape + data.shape[axis+1:]"
                      f" = {shape_text(expected)}", port=self.port("updates"))
        return TensorInfo(data.etype, data.shape)

    def input_range(self, position: int, infos) -> Bounds | None:
        return indices_along(infos[0], infos[3]) if position == 1 else None

    def compute(self, data: np.ndarray, indices: np.ndarray, updates: np.ndarray, axis: np.ndarray, *,
                inplace: bool = False) -> np.ndarray:
        a = runtime_axis(axis, data.ndim, self.port("axis"))
        expected = data.shape[:a] + indices.shape + data.shape[a + 1:]
        require_shape(updates.shape, expected, "updates", self.port("updates"))
        idx = normalize_indices(indices, data.shape[a], allow_negative=False, port=self.port("indices")).reshape(-1)
        if strict.active():  # the spec: "the order of updating the values is undefined"
            report_duplicate_slices(idx, indices.shape, data.ndim, a, port=self.port("indices"))
        etype = ElementType.from_dtype(data.dtype)
        out = output_buffer(data, compute_dtype(etype), inplace=inplace)
        # Slices along the axis: out[:, idx[j], :] = updates[:, j, :], seen as (outer, size, inner).
        outer, inner = math.prod(data.shape[:a]), math.prod(data.shape[a + 1:])
        out3 = out.reshape(outer, data.shape[a], inner)
        upd3 = updates.reshape(outer, idx.size, inner)
        keep = last_occurrence(idx, data.shape[a])  # duplicates: the last in index order wins
        if keep is None:
            out3[:, idx, :] = upd3
        else:
            out3[:, idx[keep], :] = upd3[:, keep, :]
        return from_compute(out, etype)
