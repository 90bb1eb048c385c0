"""ReverseSequence-1: for each index i along `batch_axis`, the first `seq_lengths[i]` elements
along `seq_axis` in reverse order, the rest left in place.

`data` has rank 2 or more; `batch_axis` and `seq_axis` lie in [-rank, rank-1] (negative values
count from the end) and name two different axes (one axis cannot both slice and be reversed
within the slice; OpenVINO does not check, and its kernel then writes some elements twice and
others never). `seq_lengths` is a 1-D tensor of data.shape[batch_axis] values of any numeric
type (the spec's T2: integers and floats, not boolean).

Lengths: each lies in [0, data.shape[seq_axis]], as in OpenVINO's core reference, which checks
the length against the sequence axis and reads 0 as 1 (nothing reversed; the CPU plugin reverses
nothing for it too). A float length is truncated toward zero first, as OpenVINO converts it (the
spec asks for integer values and says nothing of others). Departure from the spec, whose range is
[1, data.shape[seq_axis]]: a length of 0 is accepted, as converters write it for an empty
sequence (ONNX's ReverseSequence takes it); strict mode reports it (`seq_lengths-zero`). A
negative length is refused (the reference's unsigned check refuses it too).
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.axes import normalized_axis
from irscatter.ops.common.many_axes import take_along
from irscatter.ops.common.ranges import Bounds, extent, lengths_within
from irscatter.ops.registry import register


class ReverseSequenceAttrs(OpAttrs):
    batch_axis: int = 0
    seq_axis: int = 1


def sequence_lengths(values: np.ndarray, limit: int) -> np.ndarray | None:
    """The lengths as int64 (floats truncated), or None when one lies outside [0, limit]."""
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind not in "iub":  # a float type, the narrow ones included
        wide = values.astype(np.float64)
        if not np.all(np.isfinite(wide)):
            return None
        wide = np.trunc(wide)
        if wide.size and (wide.min() < 0 or wide.max() > limit):
            return None
        return wide.astype(np.int64)
    if values.size and (int(values.min()) < 0 or int(values.max()) > limit):
        return None
    return values.astype(np.int64)


@register("ReverseSequence", 1)
class ReverseSequence(Op):
    labels = {
        "seq_lengths-type": "seq_lengths is not of a numeric type",
        "seq_lengths-shape": "seq_lengths is not a 1-D tensor of data.shape[batch_axis] values",
        "seq_lengths-range": "a sequence length lies outside [0, data.shape[seq_axis]]",
        "seq_lengths-zero": "strict mode: a sequence length is 0, which OpenVINO reads as 1 and the spec's range "
                            "[1, data.shape[seq_axis]] excludes",
        "reverse-sequence-axes": "batch_axis and seq_axis name the same axis",
    }

    Attrs = ReverseSequenceAttrs
    attrs: ReverseSequenceAttrs
    inputs = ("data", "seq_lengths")

    def _axes(self, rank: int, at_runtime: bool = False) -> tuple[int, int]:
        b = normalized_axis(self.attrs.batch_axis, rank, port=self.port("batch_axis"), at_runtime=at_runtime)
        s = normalized_axis(self.attrs.seq_axis, rank, port=self.port("seq_axis"), at_runtime=at_runtime)
        return b, s

    def input_range(self, position: int, infos) -> Bounds | None:
        return lengths_within(extent(infos[0], self.attrs.seq_axis)) if position == 1 else None

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
                      f"every sequence length must lie in [0, {data.shape[s].min}] (data.shape[seq_axis])",
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
            raise ExecutionError(f"every sequence length must lie in [0, {data.shape[s]}] (data.shape[seq_axis])",
                                 port=port, label="seq_lengths-range")
        if strict.active():
            strict.report_values(lengths == 0, lengths, label="seq_lengths-zero", port=port, what="length",
                                 consequence="the spec's lengths start at 1; irscatter reverses nothing there, "
                                             "as OpenVINO does")
        if data.size == 0:
            return data.copy()
        # source position along seq_axis of each (batch, position): mirrored below the length (a
        # length of 0 mirrors nothing, as 1 does)
        t = np.arange(data.shape[s], dtype=np.int64)
        n = lengths[:, None]
        source = np.where(t < n, n - 1 - t, t)
        if b > s:
            source = source.T
        view = [1] * data.ndim
        view[b], view[s] = data.shape[b], data.shape[s]
        return take_along(data, source.reshape(view), s)
