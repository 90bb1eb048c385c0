"""Gather-1, Gather-7 (batch_dims) and Gather-8 (negative indices): slices along `axis`.

Index handling, one rule per op:
* Gather (every version): negative indices count from the end; an index still outside
  [0, d-1] yields zeros in its output slice, as Gather-8's spec and OpenVINO's reference do
  (the reference is shared by all versions, so irscatter applies it to all).
* GatherElements-6: indices must lie in [0, d-1], as the spec says; anything else is an error.
* GatherND-5/8: each component lies in [-d, d-1], negatives count from the end (OpenVINO's
  reference); anything else is an error (the reference leaves it undefined).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.axes import check_axis_input, constant_axis, normalized_axis, runtime_axis
from irscatter.ops.common.ranges import Bounds, indices_along
from irscatter.ops.common.types import check_integral
from irscatter.ops.registry import register


class GatherAttrs(OpAttrs):
    batch_dims: int = 0


def gather_with_zero_fill(data: np.ndarray, indices: np.ndarray, axis: int, batch_dims: int,
                          port: str) -> np.ndarray:
    b = batch_dims
    if b == 0 and _takes_every_slice_in_order(indices, data.shape[axis]):
        return data.view()  # (a stateful decoder's beam reordering of one beam, on its whole cache each step)
    if b == 0 and (indices.dtype.kind == "i" or indices.dtype.itemsize < 8):  # u64 would wrap in np.take
        try:  # every index in [-size, size): np.take counts a negative one from the end, as Gather does
            return np.asarray(np.take(data, indices, axis=axis))
        except IndexError:
            pass  # an index outside: zeros there, below
    if data.shape[:b] != indices.shape[:b]:
        raise ExecutionError(f"the first {b} dimensions of data {list(data.shape)} and indices "
                             f"{list(indices.shape)} must be equal (batch_dims = {b})", port=port)
    batch, outer, size, inner = data.shape[:b], data.shape[b:axis], data.shape[axis], data.shape[axis + 1:]
    nb, no, ni = math.prod(batch), math.prod(outer), math.prod(inner)
    idx = indices.astype(np.int64).reshape(nb, math.prod(indices.shape[b:]))
    idx = np.where(idx < 0, idx + size, idx)
    valid = (idx >= 0) & (idx < size)
    if size == 0:  # every index is out of range: all zeros, and no element to point at
        return np.zeros(batch + outer + indices.shape[b:] + inner, dtype=data.dtype)
    safe = np.where(valid, idx, 0)
    cube = data.reshape(nb, no, size, ni)
    out = cube[np.arange(nb)[:, None, None], np.arange(no)[None, :, None], safe[:, None, :]]  # (nb, no, n, ni)
    if not valid.all():
        out = np.where(valid[:, None, :, None], out, np.zeros((), dtype=out.dtype))
    return out.reshape(batch + outer + indices.shape[b:] + inner)


def _takes_every_slice_in_order(indices: np.ndarray, size: int) -> bool:
    """Whether `indices` is 0, 1, ..., size - 1 (1-D): the gather is then its data, given as a
    view, which the run's ownership rule (`ops/common/buffers.py`) never writes through."""
    if indices.ndim != 1 or indices.size != size or size == 0:
        return False
    return bool(indices[0] == 0 and indices[-1] == size - 1) and bool(np.array_equal(indices, np.arange(size)))


class Gather1(Op):
    """Gather-1: takes slices of `data` along `axis` at `indices` (batch_dims = 0)."""

    labels = {
        "batch-dims-axis": "batch_dims is greater than axis",
        "gather-zero-fill": "strict mode: an index outside [-d, d-1] gives zeros, which only Gather-8's spec defines",
    }

    inputs = ("data", "indices", "axis")
    spec_wraps_and_fills: ClassVar[bool] = False  # Gather-8's spec defines negatives and the zero fill

    def batch_dims(self, indices_rank: int) -> int:
        b = self.attrs.batch_dims if isinstance(self.attrs, GatherAttrs) else 0
        return b + indices_rank if b < 0 else b

    def infer(self, data: TensorInfo, indices: TensorInfo, axis: TensorInfo) -> TensorInfo:
        check_integral(indices, "indices", self.port("indices"), "indices-type")
        check_axis_input(axis, port=self.port("axis"))
        a = constant_axis(axis)
        if a is None or not (data.shape.rank_is_static and indices.shape.rank_is_static):
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        r, q = data.shape.rank, indices.shape.rank
        check(r >= 1, "data-rank", "data must have rank at least 1, found a scalar", port=self.port("data"))
        a = normalized_axis(a, r, port=self.port("axis"))
        b = self.batch_dims(q)
        check(0 <= b <= q, "batch-dims-range", f"batch_dims {b} must lie in [0, rank(indices) = {q}]")
        check(b <= a, "batch-dims-axis", f"batch_dims ({b}) must not exceed axis ({a})")
        for d in range(b):
            check(data.shape[d].compatible(indices.shape[d]), "batch-shape",
                  f"dimension {d} of data ({data.shape[d]}) and indices ({indices.shape[d]}) must be equal "
                  f"(batch_dims = {b})", port=self.port("indices"))
        dims = data.shape.ranked_dims[:a] + indices.shape.ranked_dims[b:] + data.shape.ranked_dims[a + 1:]
        return TensorInfo(data.etype, PartialShape.of(dims))

    def compute(self, data: np.ndarray, indices: np.ndarray, axis: np.ndarray) -> np.ndarray:
        if data.ndim == 0:
            raise ExecutionError("data must have rank at least 1, found a scalar", port=self.port("data"))
        a = runtime_axis(axis, data.ndim, self.port("axis"))
        b = self.batch_dims(indices.ndim)
        if not (0 <= b <= min(indices.ndim, a)):
            raise ExecutionError(f"batch_dims {b} must lie in [0, min(rank(indices), axis)]")
        if not self.spec_wraps_and_fills and strict.active():
            self._report_outside_spec(indices, data.shape[a])
        return gather_with_zero_fill(data, indices, a, b, self.port("indices"))


    def input_range(self, position: int, infos) -> Bounds | None:
        return indices_along(infos[0], infos[2]) if position == 1 else None

    def _report_outside_spec(self, indices: np.ndarray, size: int) -> None:
        """Strict mode: Gather-1/7's spec says indices lie in [0, d-1]; irscatter applies
        Gather-8's rule (OpenVINO's shared reference) to the others."""
        port = self.port("indices")
        strict.report_values((indices < 0) & (indices >= -size), indices, label="negative-index", port=port,
                             what="negative index", consequence="the spec expects [0, d-1]; irscatter counts it from "
                             "the end, as Gather-8 and OpenVINO's reference do")
        strict.report_values((indices < -size) | (indices >= size), indices, label="gather-zero-fill", port=port,
                             what=f"index outside [-{size}, {size - 1}]", consequence="the spec expects [0, d-1]; "
                             "irscatter gives zeros, as Gather-8 and OpenVINO's reference do")


register("Gather", 1)(Gather1)


@register("Gather", 7)
class Gather7(Gather1):
    Attrs = GatherAttrs
    attrs: GatherAttrs


@register("Gather", 8)
class Gather8(Gather7):
    """Gather-8 adds negative indices and the zero fill to the spec; irscatter's Gather-1/7
    already behave so, as OpenVINO's shared reference does."""

    spec_wraps_and_fills = True
