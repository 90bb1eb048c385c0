"""Reverse-1: `data` with the order of its elements reversed along some axes.

In `index` mode the second input lists the axes, a 1-D tensor of any integer type with at most
rank(data) values (the spec's range of lengths); negative axes count from the end, and an axis
listed twice is reversed once (the axes are a set, as in OpenVINO; the spec is silent). In
`mask` mode it is a 1-D boolean tensor with one flag per axis. No axis (an empty list, or no
flag set) passes `data` through.

Departure from OpenVINO: it accepts an index list longer than the rank (say [0, 1, 0] for a
matrix); the spec bounds the length by the rank, and irscatter refuses it.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common.axes import int_values, normalized_axis
from irscatter.ops.common.types import check_integral
from irscatter.ops.registry import register


class ReverseAttrs(OpAttrs):
    mode: Annotated[Literal["index", "mask"], Lower]


@register("Reverse", 1)
class Reverse(Op):
    labels = {
        "reverse-mask-type": "in mask mode, the axis input is not boolean",
        "reverse-mask-length": "in mask mode, the axis input does not have one flag per axis of data",
    }

    Attrs = ReverseAttrs
    attrs: ReverseAttrs
    inputs = ("data", "axis")

    def _axes(self, rank: int, axis: np.ndarray, at_runtime: bool) -> set[int]:
        port = self.port("axis")
        values = np.asarray(axis).reshape(-1)
        if self.attrs.mode == "mask":
            if len(values) != rank:
                message = f"mask mode needs one flag per axis of data (rank {rank}), found {len(values)}"
                if at_runtime:
                    raise ExecutionError(message, port=port, label="reverse-mask-length")
                fail("reverse-mask-length", message, port=port)
            return {i for i, flag in enumerate(values) if flag}
        if len(values) > rank:
            message = f"index mode takes at most {rank} axes (the rank of data), found {len(values)}"
            if at_runtime:
                raise ExecutionError(message, port=port, label="axes-count")
            fail("axes-count", message, port=port)
        return {normalized_axis(a, rank, port=port, at_runtime=at_runtime) for a in int_values(values)}

    def infer(self, data: TensorInfo, axis: TensorInfo) -> TensorInfo:
        port = self.port("axis")
        if self.attrs.mode == "mask":
            check(axis.etype in (ElementType.boolean, ElementType.dynamic), "reverse-mask-type",
                  f"mask mode takes a boolean axis input, found {axis.etype}", port=port)
        else:
            check_integral(axis, "axis", port, "axes-type")
        if axis.shape.rank_is_static:
            check(axis.shape.rank == 1, "axes-vector", f"axis must be a 1-D tensor, found {axis.shape}", port=port)
            if data.shape.rank_is_static and axis.shape[0].is_static:
                n, rank = axis.shape[0].min, data.shape.rank
                if self.attrs.mode == "mask":
                    check(n == rank, "reverse-mask-length",
                          f"mask mode needs one flag per axis of data (rank {rank}), found {n}", port=port)
                else:
                    check(n <= rank, "axes-count", f"index mode takes at most {rank} axes (the rank of data), found {n}",
                          port=port)
        if axis.value is not None and data.shape.rank_is_static:
            self._axes(data.shape.rank, axis.value, at_runtime=False)
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, axis: np.ndarray) -> np.ndarray:
        axes = self._axes(data.ndim, axis, at_runtime=True)
        if not axes:
            return data.view()  # (indexing a 0-d array with () would give a numpy scalar)
        return data[tuple(slice(None, None, -1) if a in axes else slice(None) for a in range(data.ndim))]
