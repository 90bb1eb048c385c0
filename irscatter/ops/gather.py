"""The gather family, the inverses of the scatters: Gather-1/7/8, GatherElements-6, GatherND-5/8.

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
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import (Op, OpAttrs, TensorInfo, check, check_axis_input, check_integral,
    constant_axis, normalized_axis, runtime_axis)
from irscatter.ops.registry import register
from irscatter.ops.scatter_core import normalize_indices

# --- Gather ----------------------------------------------------------------------------------------


class GatherAttrs(OpAttrs):
    batch_dims: int = 0


def gather_with_zero_fill(data: np.ndarray, indices: np.ndarray, axis: int, batch_dims: int,
                          port: str) -> np.ndarray:
    b = batch_dims
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


class Gather1(Op):
    """Gather-1: takes slices of `data` along `axis` at `indices` (batch_dims = 0)."""

    inputs = ("data", "indices", "axis")
    has_batch_dims: ClassVar[bool] = False

    def batch_dims(self, indices_rank: int) -> int:
        b = self.attrs.batch_dims if self.has_batch_dims else 0
        return b + indices_rank if b < 0 else b

    def infer(self, data: TensorInfo, indices: TensorInfo, axis: TensorInfo) -> TensorInfo:
        check_integral(indices, "indices", self.port("indices"))
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
        dims = data.shape.dims[:a] + indices.shape.dims[b:] + data.shape.dims[a + 1:]
        return TensorInfo(data.etype, PartialShape.of(dims))

    def compute(self, data: np.ndarray, indices: np.ndarray, axis: np.ndarray) -> np.ndarray:
        if data.ndim == 0:
            raise ExecutionError("data must have rank at least 1, found a scalar", port=self.port("data"))
        a = runtime_axis(axis, data.ndim, self.port("axis"))
        b = self.batch_dims(indices.ndim)
        if not (0 <= b <= min(indices.ndim, a)):
            raise ExecutionError(f"batch_dims {b} must lie in [0, min(rank(indices), axis)]")
        return gather_with_zero_fill(data, indices, a, b, self.port("indices"))


register("Gather", 1)(Gather1)


@register("Gather", 7)
class Gather7(Gather1):
    Attrs = GatherAttrs
    has_batch_dims = True


@register("Gather", 8)
class Gather8(Gather7):
    """Gather-8 adds negative indices and the zero fill to the spec; irscatter's Gather-1/7
    already behave so, as OpenVINO's shared reference does."""


# --- GatherElements-6 -------------------------------------------------------------------------------


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

    def compute(self, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
        a = normalized_axis(self.attrs.axis, data.ndim, port=self.port("axis"), at_runtime=True)
        if indices.ndim != data.ndim or any(n != m for d, (n, m) in enumerate(zip(indices.shape, data.shape)) if d != a):
            raise ExecutionError(f"indices shape {list(indices.shape)} does not fit data shape {list(data.shape)}",
                                 port=self.port("indices"))
        idx = normalize_indices(indices, data.shape[a], allow_negative=True, port=self.port("indices"))
        return np.take_along_axis(data, idx, axis=a)


# --- GatherND-5 / -8 --------------------------------------------------------------------------------


@register("GatherND", 5)
class GatherND5(Op):
    """Each index tuple (the last axis of `indices`) picks an element or slice of `data`,
    per batch when batch_dims > 0."""

    Attrs = GatherAttrs
    inputs = ("data", "indices")
    merge_batch: ClassVar[bool] = True  # v5 folds the batch dimensions of the output into one

    def _output_dims(self, batch, index_lead, tail):
        if self.merge_batch and len(batch) > 0:
            if all(d.is_static for d in batch):
                batch = (Dimension.static(math.prod(d.min for d in batch)),)
            else:
                batch = (Dimension.dynamic(),)
        return tuple(batch) + tuple(index_lead) + tuple(tail)

    def infer(self, data: TensorInfo, indices: TensorInfo) -> TensorInfo:
        check_integral(indices, "indices", self.port("indices"))
        b = self.attrs.batch_dims
        if not (data.shape.rank_is_static and indices.shape.rank_is_static):
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        r, q = data.shape.rank, indices.shape.rank
        check(r >= 1, "data-rank", "data rank must be at least 1", port=self.port("data"))
        check(q >= 1, "indices-rank", "indices rank must be at least 1", port=self.port("indices"))
        check(0 <= b < min(r, q), "batch-dims-range", f"batch_dims ({b}) must be below the ranks of data ({r}) and indices ({q})")
        for d in range(b):
            check(data.shape[d].compatible(indices.shape[d]), "batch-shape",
                  f"dimension {d} of data ({data.shape[d]}) and indices ({indices.shape[d]}) must be equal", port=self.port("indices"))
        last = indices.shape[q - 1]
        if not last.is_static:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        k = last.min
        check(b + k <= r, "index-depth",
              f"indices.shape[-1] ({k}) + batch_dims ({b}) must not exceed the rank of data ({r})", port=self.port("indices"))
        dims = self._output_dims(indices.shape.dims[:b], indices.shape.dims[b:-1], data.shape.dims[b + k:])
        return TensorInfo(data.etype, PartialShape.of(dims))

    def compute(self, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
        b, k = self.attrs.batch_dims, indices.shape[-1]
        if data.shape[:b] != indices.shape[:b] or b + k > data.ndim:
            raise ExecutionError(f"indices shape {list(indices.shape)} does not fit data shape {list(data.shape)} "
                                 f"(batch_dims = {b})", port=self.port("indices"))
        nb = math.prod(data.shape[:b])
        picked = data.shape[b:b + k]
        tuples = indices.reshape(nb, math.prod(indices.shape[b:-1]), k)
        norm = normalize_indices(tuples, np.array(picked, np.int64), allow_negative=True, port=self.port("indices"),
                                 what="index component")
        rows = np.ravel_multi_index(tuple(np.moveaxis(norm, -1, 0)), picked) if k else np.zeros(tuples.shape[:2], np.int64)
        table = data.reshape(nb, math.prod(picked), math.prod(data.shape[b + k:]))
        out = table[np.arange(nb)[:, None], rows]
        dims = self._output_dims(tuple(Dimension.static(n) for n in indices.shape[:b]),
                                 tuple(Dimension.static(n) for n in indices.shape[b:-1]),
                                 tuple(Dimension.static(n) for n in data.shape[b + k:]))
        return out.reshape(tuple(d.min for d in dims))


@register("GatherND", 8)
class GatherND8(GatherND5):
    merge_batch = False
