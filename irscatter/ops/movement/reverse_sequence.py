"""ReverseSequence-1: for each index i along `batch_axis`, the first `seq_lengths[i]` elements
along `seq_axis` in reverse order, the rest left in place.

`data` has rank 2 or more; `batch_axis` and `seq_axis` lie in [-rank, rank-1] (negative values
count from the end) and name two different axes (one axis cannot both slice and be reversed
within the slice; OpenVINO does not check, and its kernel then writes some elements twice and
others never). `seq_lengths` is a 1-D tensor of data.shape[batch_axis] values of any numeric
type (the spec's T2: integers and floats, not boolean).

Lengths, from the spec: each lies in [1, data.shape[seq_axis]]. A float length is truncated
toward zero first, as OpenVINO converts it (the spec asks for integer values and says nothing
of others). Departure from OpenVINO: it takes a length of 0 as 1 (nothing reversed); the spec's
range excludes 0, and irscatter refuses it, as it refuses any length outside the range.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.many_axes import take_along
from irscatter.ops.registry import register


class ReverseSequenceAttrs(OpAttrs):
    batch_axis: int = 0
    seq_axis: int = 1


def sequence_lengths(values: np.ndarray, limit: int) -> np.ndarray | None:
    """The lengths as int64 (floats truncated), or None when one lies outside [1, limit]."""
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind not in "iub":  # a float type, the narrow ones included
        wide = values.astype(np.float64)
        if not np.all(np.isfinite(wide)):
            return None
        wide = np.trunc(wide)
        if wide.size and (wide.min() < 1 or wide.max() > limit):
            return None
        return wide.astype(np.int64)
    if values.size and (int(values.min()) < 1 or int(values.max()) > limit):
        return None
    return values.astype(np.int64)


@register("ReverseSequence", 1)
class ReverseSequence(Op):
    labels = {
        "seq_lengths-type": "seq_lengths is not of a numeric type",
        "seq_lengths-shape": "seq_lengths is not a 1-D tensor of data.shape[batch_axis] values",
        "seq_lengths-range": "a sequence length lies outside [1, data.shape[seq_axis]]",
        "reverse-sequence-axes": "batch_axis and seq_axis name the same axis",
    }

    Attrs = ReverseSequenceAttrs
    inputs = ("data", "seq_lengths")

    def _axes(self, rank: int, at_runtime: bool = False) -> tuple[int, int]:
        b = normalized_axis(self.attrs.batch_axis, rank, port=self.port("batch_axis"), at_runtime=at_runtime)
        s = normalized_axis(self.attrs.seq_axis, rank, port=self.port("seq_axis"), at_runtime=at_runtime)
        return b, s

    def infer(self, data: TensorInfo, seq_lengths: TensorInfo) -> TensorInfo:
        port = self.port("seq_lengths")
        et = seq_lengths.etype
        check(et is ElementType.dynamic or et.is_integral or et.is_float, "seq_lengths-type",
              f"seq_lengths must be of a numeric type, found {et}", port=port)
        if seq_lengths.shape.rank_is_static:
            check(seq_lengths.shape.rank == 1, "seq_lengths-shape",
                  f"seq_lengths must be a 1-D tensor, found {seq_lengths.shape}", port=port)
        if data.shape.rank_is_static:
            rank = data.shape.rank
            check(rank >= 2, "data-rank", f"data must have rank 2 or more, found {data.shape}", port=self.port("data"))
            b, s = self._axes(rank)
            check(b != s, "reverse-sequence-axes", f"batch_axis and seq_axis both name axis {b}",
                  port=self.port("seq_axis"))
            if seq_lengths.shape.rank_is_static:
                check(seq_lengths.shape[0].compatible(data.shape[b]), "seq_lengths-shape",
                      f"seq_lengths must have data.shape[batch_axis] = {data.shape[b]} values, found {seq_lengths.shape}",
                      port=port)
            if seq_lengths.value is not None and data.shape[s].is_static:
                check(sequence_lengths(seq_lengths.value, data.shape[s].min) is not None, "seq_lengths-range",
                      f"every sequence length must lie in [1, {data.shape[s].min}] (data.shape[seq_axis])",
                      port=port)
        return TensorInfo(data.etype, data.shape)

    def compute(self, data: np.ndarray, seq_lengths: np.ndarray) -> np.ndarray:
        port = self.port("seq_lengths")
        if data.ndim < 2:
            raise ExecutionError(f"data must have rank 2 or more, found shape {list(data.shape)}",
                                 port=self.port("data"), label="data-rank")
        b, s = self._axes(data.ndim, at_runtime=True)
        if b == s:
            raise ExecutionError(f"batch_axis and seq_axis both name axis {b}", port=self.port("seq_axis"),
                                 label="reverse-sequence-axes")
        if seq_lengths.shape != (data.shape[b],):
            raise ExecutionError(f"seq_lengths must have shape [{data.shape[b]}], found {list(seq_lengths.shape)}",
                                 port=port, label="seq_lengths-shape")
        lengths = sequence_lengths(seq_lengths, data.shape[s])
        if lengths is None:
            raise ExecutionError(f"every sequence length must lie in [1, {data.shape[s]}] (data.shape[seq_axis])",
                                 port=port, label="seq_lengths-range")
        if data.size == 0:
            return data.copy()
        # source position along seq_axis of each (batch, position): mirrored below the length
        t = np.arange(data.shape[s], dtype=np.int64)
        n = lengths[:, None]
        source = np.where(t < n, n - 1 - t, t)
        if b > s:
            source = source.T
        view = [1] * data.ndim
        view[b], view[s] = data.shape[b], data.shape[s]
        return take_along(data, source.reshape(view), s)
