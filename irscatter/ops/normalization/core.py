"""What the normalization ops share: checks of a 1-D axes input and of per-channel parameter
inputs, and where GroupNormalization's and MVN's compiled passes are and what they take."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np

from irscatter.ir.shapes import Dimension
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common import threads
from irscatter.ops.common.axes import int_values, normalized_axis


def check_axes_vector(op: Op, data: TensorInfo, axes: TensorInfo) -> None:
    """`axes` is 1-D and names no more axes than `data` has (its type is each op's own rule)."""
    port = op.port("axes")
    if axes.shape.rank_is_static:
        check(axes.shape.rank == 1, "axes-vector", f"axes must be a 1-D tensor, found {axes.shape}", port=port)
        if data.shape.rank_is_static and axes.shape[0].is_static:
            check(int(axes.shape[0]) <= data.shape.rank, "axes-count",
                  f"{int(axes.shape[0])} axes for data of rank {data.shape.rank}", port=port)


def channels_of(op: Op, data: TensorInfo, parameters: Mapping[str, TensorInfo]) -> Dimension:
    """The channel count (axis 1 of `data`, rank 2 or more) that every 1-D parameter input
    (scale, bias, mean, variance) must match; a dynamic one is learnt from the parameters."""
    channels = Dimension.dynamic()
    if data.shape.rank_is_static:
        check(data.shape.rank >= 2, "data-rank", f"the data must have rank 2 or more, found {data.shape}",
              port=op.port("data"))
        channels = data.shape[1]
    for name, info in parameters.items():
        if info.shape.rank_is_static:
            check(info.shape.rank == 1 and info.shape[0].compatible(channels), "channel-shape",
                  f"{name} must be a 1-D tensor as long as the data's channel axis ({channels}), "
                  f"found {info.shape}", port=op.port(name))
            channels = info.shape[0] if channels.is_dynamic else channels
    return channels


def distinct_axes(op: Op, values: list[int], rank: int, *, at_runtime: bool = False) -> tuple[int, ...]:
    """The axes named by an axes input, normalized, each once and in order (naming one twice is
    allowed), or an error naming the first out of range."""
    port = op.port("axes")
    return tuple(sorted({normalized_axis(a, rank, port=port, at_runtime=at_runtime) for a in values}))


def check_known_axes(op: Op, data: TensorInfo, axes: TensorInfo) -> None:
    """`axes` is 1-D, names no more axes than `data` has, and (when known) only axes it has."""
    check_axes_vector(op, data, axes)
    if axes.value is not None and data.shape.rank_is_static:
        distinct_axes(op, int_values(axes.value), data.shape.rank)


# The compiled passes of GroupNormalization and MVN (a module that imports numba), the compute
# types they take (f16 and bf16 compute in f32), and an element's weight for `threads.parts` in
# `compiled_moments`: a few operations a pass, bound by memory.
KERNELS = "irscatter.ops.normalization.norm_kernels"
COMPILED_TYPES = (np.dtype(np.float32), np.dtype(np.float64))
ELEMENT_WORK = 4


def deviation(variance: np.ndarray, e: np.generic, inside_sqrt: bool) -> np.ndarray:
    """sqrt(variance + e), or (not `inside_sqrt`) sqrt(variance) + e, in the variance's type."""
    return np.sqrt(variance + e) if inside_sqrt else np.sqrt(variance) + e


def compiled_moments(slices: np.ndarray, rows: np.ndarray, epsilon: float,
                     inside_sqrt: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int]]]:
    """The first half of GroupNormalization's compiled normalization (with numba), in numpy's
    path's arithmetic: `slices` [S, n] are the runs each mean and variance go over (the groups),
    seen as `rows` [R, m] (each slice's R / S rows in turn: its channels). numpy's sum of each
    slice over n, the compiled pass of the rows' squared differences from their slice's mean
    (`norm_kernels.centred_squares`, on the thread policy's parts, ranges of rows), numpy's sum
    of those over n, and the deviation, sqrt(variance + epsilon) or (not `inside_sqrt`)
    sqrt(variance) + epsilon. Returns each row's mean and deviation, the squares (which the
    second pass may overwrite with its output) and the parts. MVN's parts make the same
    arithmetic over their own rows (`mvn._standardized_rows`)."""
    from irscatter.ops.normalization import norm_kernels  # (imports numba: only when used)

    dtype, per_slice = rows.dtype, len(rows) // len(slices)
    count, e = dtype.type(slices.shape[1]), dtype.type(epsilon)
    spans = threads.spans(len(rows), threads.parts(rows.size * ELEMENT_WORK))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        means = _per_row(np.add.reduce(slices, axis=1, dtype=dtype) / count, per_slice)
        squares = np.empty_like(rows)
        if len(spans) == 1:  # (most calls: no hand-over to set up)
            norm_kernels.centred_squares(rows, means, squares)
        else:
            threads.run([partial(norm_kernels.centred_squares, rows[lo:hi], means[lo:hi], squares[lo:hi])
                         for lo, hi in spans])
        variances = np.add.reduce(squares.reshape(slices.shape), axis=1, dtype=dtype) / count
        deviations = _per_row(deviation(variances, e, inside_sqrt), per_slice)
    return means, deviations, squares, spans


def _per_row(values: np.ndarray, per_slice: int) -> np.ndarray:
    """Each slice's value repeated for each of its rows (the values themselves for one a slice)."""
    return values if per_slice == 1 else np.repeat(values, per_slice)
