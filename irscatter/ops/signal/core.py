"""What the Fourier transforms share: the complex layout, the axes and signal_size inputs, the
output shapes they give, and the transforms themselves over np.fft; and, for STFT and ISTFT,
the frame_size, frame_step and window inputs.

Complex tensors are real tensors whose last dimension (2) holds the real and the imaginary part.
For those (DFT, IDFT, IRDFT) an axis counts in the complex tensor: it lies in [-(r-1), r-2] for
data of rank r, and a negative axis a means r - 1 + a. RDFT's data is real: its axes lie in
[-r, r-1] and a negative axis means r + a. Axes may not repeat.

signal_size has one value per axis: -1 keeps the axis's length, any other value n >= 0 trims
the axis to its first n elements or pads it with zeros at the end (0 gives an empty axis, or a
sum over nothing: zeros). Output sizes that come from signal_size values pass the tensor-size
limit before anything is allocated.

Every transform runs in complex128 and is rounded once to the output type. The sums of the
spec multiply every input element of a transformed block by a twiddle factor, so one NaN there
makes the whole block NaN (NaN * 0 is NaN), which is what OpenVINO's reference computes; numpy's
real transforms skip the imaginary part of the 0th bin and would keep it 0, so the kernels mark
those blocks NaN themselves. Infinities give inf/NaN patterns that depend on the order of the
sums (numpy's pocketfft here); no two FFT implementations agree on them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np

from irscatter.errors import ExecutionError, ValidationError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.axes import int_values

FLOAT_TYPES = (ElementType.f32, ElementType.f16, ElementType.bf16, ElementType.f64)
INDEX_TYPES = (ElementType.i32, ElementType.i64)


def check_float_type(op: Op, info: TensorInfo, name: str) -> None:
    check(info.etype is ElementType.dynamic or info.etype in FLOAT_TYPES, "float-type",
          f"{op.type_name} takes f32, f16, bf16 or f64 {name}, found {info.etype}", port=op.port(name))


def _index_type(info: TensorInfo) -> bool:
    return info.etype is ElementType.dynamic or info.etype in INDEX_TYPES


def run_inference(infer: Callable[..., TensorInfo], *arrays: np.ndarray | None) -> TensorInfo:
    """At run time: an op's inference (its bound `infer`, of one output) on the actual inputs (the values of axes, sizes and
    frames are known now), its refusals turned into execution errors with the same labels, and
    the output's size held to the tensor limits (it follows from input values)."""
    try:
        info = infer(*(None if a is None else TensorInfo.of(a) for a in arrays))
    except ValidationError as e:
        raise ExecutionError(e.message, port=e.port, label=e.label) from None
    check_allocation(info.shape.to_tuple(), info.etype.dtype.itemsize)
    return info


def finish(values: np.ndarray, etype: ElementType) -> np.ndarray:
    """A result computed in f64 rounded once to the output type."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.ascontiguousarray(values).astype(etype.dtype)


def as_complex(data: np.ndarray) -> np.ndarray:
    pairs = data.astype(np.float64)
    return pairs[..., 0] + 1j * pairs[..., 1]


def as_pairs(values: np.ndarray) -> np.ndarray:
    return np.stack([values.real, values.imag], axis=-1)


def fitted(x: np.ndarray, axes: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """`x` with each of `axes` trimmed or zero-padded at the end to its size in `sizes`."""
    shape = list(x.shape)
    for a, n in zip(axes, sizes):
        shape[a] = n
    if tuple(shape) == x.shape:
        return x
    check_allocation(shape, 16)
    out = np.zeros(shape, dtype=x.dtype)
    common = tuple(slice(0, min(s, d)) for s, d in zip(shape, x.shape))
    out[common] = x[common]
    return out


NAN_PAIR = complex(np.nan, np.nan)  # NaN in both parts (np.nan as a complex keeps a 0 imaginary part)


def nan_blocks(x: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """Where a transformed block of `x` holds a NaN (kept dims, to broadcast over the output)."""
    return np.isnan(x).any(axis=tuple(axes), keepdims=True)


class FourierBase(Op):
    """DFT-7, IDFT-7, RDFT-9 and IRDFT-9: data, axes and an optional signal_size."""

    inputs = ("data", "axes", "signal_size")
    optional_inputs = 1
    complex_input: ClassVar[bool] = True  # data holds (real, imaginary) pairs in its last dimension

    # -- the inputs --------------------------------------------------------------------------

    def check_inputs(self, data: TensorInfo, axes: TensorInfo, sizes: TensorInfo | None) -> None:
        check_float_type(self, data, "data")
        check(_index_type(axes), "axes-type", f"axes must be of type i32 or i64, found {axes.etype}",
              port=self.port("axes"))
        if axes.shape.rank_is_static:
            check(axes.shape.rank == 1, "axes-vector", f"axes must be a 1-D tensor, found shape {axes.shape}",
                  port=self.port("axes"))
        if sizes is not None:
            check(_index_type(sizes), "signal-size-type",
                  f"signal_size must be of type i32 or i64, found {sizes.etype}", port=self.port("signal_size"))
            if sizes.shape.rank_is_static:
                check(sizes.shape.rank == 1, "signal-size-shape",
                      f"signal_size must be a 1-D tensor, found shape {sizes.shape}", port=self.port("signal_size"))
                if axes.shape.rank_is_static and axes.shape.rank == 1:
                    check(sizes.shape[0].compatible(axes.shape[0]), "signal-size-shape",
                          f"signal_size has shape {sizes.shape} and axes {axes.shape}: they must be as long",
                          port=self.port("signal_size"))
        if data.shape.rank_is_static:
            rank = data.shape.rank
            lowest = 2 if self.complex_input else 1
            check(rank >= lowest, "data-rank", f"{self.type_name} takes data of rank {lowest} or more, found {rank}",
                  port=self.port("data"))
            if self.complex_input:
                check(data.shape[rank - 1].contains(2), "complex-shape",
                      f"the last dimension of data holds (real, imaginary) and must be 2, found {data.shape}",
                      port=self.port("data"))
            if axes.shape.rank_is_static and axes.shape.rank == 1 and axes.shape[0].is_static:
                room = self.signal_rank(rank)
                check(int(axes.shape[0]) <= room, "axes-count",
                      f"{int(axes.shape[0])} axes for data of shape {data.shape}: at most {room}",
                      port=self.port("axes"))

    def signal_rank(self, rank: int) -> int:
        """How many axes a transform may name: those of the complex (or real) tensor."""
        return rank - 1 if self.complex_input else rank

    def known_axes(self, axes: TensorInfo, rank: int) -> list[int] | None:
        values = int_values(axes.value)
        if values is None:
            return None
        room = self.signal_rank(rank)
        out = []
        for a in values:
            check(-room <= a < room, "axis-range",
                  f"axis {a} is outside [{-room}, {room - 1}] for data of rank {rank}"
                  + (" (axes count in the complex tensor, without the last dimension)" if self.complex_input else ""),
                  port=self.port("axes"))
            out.append(a + room if a < 0 else a)
        check(len(set(out)) == len(out), "axes-unique", f"axes {values} name an axis twice", port=self.port("axes"))
        return out

    def known_sizes(self, sizes: TensorInfo | None, count: int) -> list[int] | None:
        """signal_size's values (-1 where the axis keeps its length), [-1, ...] when absent."""
        if sizes is None:
            return [-1] * count
        values = int_values(sizes.value)
        if values is None:
            return None
        check(len(values) == count, "signal-size-shape",
              f"signal_size has {len(values)} values for {count} axes", port=self.port("signal_size"))
        for n in values:
            check(n >= -1, "signal-size-value", f"signal_size {values} has a value below -1",
                  port=self.port("signal_size"))
        return values

    # -- the output shape --------------------------------------------------------------------

    def output_dims(self, dims: list[Dimension], axes: list[int], sizes: list[int]) -> list[Dimension]:
        """The output's dimensions (without the complex pair) from the data's and signal_size."""
        out = list(dims)
        for a, n in zip(axes, sizes):
            if n != -1:
                out[a] = Dimension.static(n)
        return out

    def infer(self, data: TensorInfo, axes: TensorInfo, signal_size: TensorInfo | None = None) -> TensorInfo:
        self.check_inputs(data, axes, signal_size)
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        rank = data.shape.rank
        signal_dims = list(data.shape)[: self.signal_rank(rank)]
        known = self.known_axes(axes, rank)
        if known is not None:
            self.check_axes_count(known)
        sizes = None if known is None else self.known_sizes(signal_size, len(known))
        if known is None:
            out = self.unknown_axes_dims(signal_dims, signal_size is not None)
        elif sizes is None:
            out = self.output_dims(signal_dims, known, [-1] * len(known))
            for a in known:
                out[a] = Dimension.dynamic()
        else:
            out = self.output_dims(signal_dims, known, sizes)
        return TensorInfo(data.etype, PartialShape.of(out + [Dimension.static(2)] if self.complex_output else out))

    complex_output: ClassVar[bool] = True

    def unknown_axes_dims(self, dims: list[Dimension], has_sizes: bool) -> list[Dimension]:
        """The output's dimensions when the axes are not known: a complex transform without
        signal_size keeps every length; any other transform may change each one."""
        return [Dimension.dynamic()] * len(dims) if has_sizes else list(dims)

    def check_axes_count(self, axes: list[int]) -> None:
        """DFT and IDFT take an empty axes list (nothing is transformed)."""

    # -- the kernel --------------------------------------------------------------------------

    def plan(self, data: np.ndarray, axes: np.ndarray, signal_size: np.ndarray | None):
        """The checked axes, the transform length of each, and the output shape."""
        info = run_inference(self.infer, data, axes, signal_size)
        known = self.known_axes(TensorInfo.of(axes), data.ndim)
        assert known is not None  # axes has a value here
        sizes = self.known_sizes(None if signal_size is None else TensorInfo.of(signal_size), len(known))
        assert sizes is not None  # so has signal_size, when given
        lengths = [data.shape[a] if n == -1 else n for a, n in zip(known, sizes)]
        return known, lengths, info.shape.to_tuple()


class ComplexTransform(FourierBase):
    """DFT-7 and IDFT-7: the complex transform over the axes, unnormalised or divided by N."""

    inverse: ClassVar[bool] = False

    def compute(self, data: np.ndarray, axes: np.ndarray, signal_size: np.ndarray | None = None) -> np.ndarray:
        known, lengths, shape = self.plan(data, axes, signal_size)
        etype = ElementType.from_dtype(data.dtype)
        if math.prod(shape) == 0:
            return np.zeros(shape, etype.dtype)
        x = fitted(as_complex(data), known, lengths)
        if not known:
            y = x
        elif min(lengths) == 0:
            y = np.zeros(x.shape, np.complex128)
        else:
            y = (np.fft.ifftn if self.inverse else np.fft.fftn)(x, axes=known)
            y = np.where(nan_blocks(x, known), NAN_PAIR, y)
        return finish(as_pairs(y), etype)


# -- STFT and ISTFT ----------------------------------------------------------------------------


def check_frame_inputs(op: Op, frame_size: TensorInfo, frame_step: TensorInfo) -> tuple[int | None, int | None]:
    """frame_size and frame_step: i32 or i64 scalars, positive; their values when known."""
    known = []
    for name, info in (("frame_size", frame_size), ("frame_step", frame_step)):
        check(_index_type(info), "frame-type", f"{name} must be of type i32 or i64, found {info.etype}",
              port=op.port(name))
        if info.shape.rank_is_static:
            check(info.shape.rank == 0, "frame-shape", f"{name} must be a scalar, found shape {info.shape}",
                  port=op.port(name))
        value = None if info.value is None else int(np.asarray(info.value).reshape(-1)[0])
        if value is not None:
            check(value > 0, "frame-value", f"{name} must be positive, found {value}", port=op.port(name))
        known.append(value)
    return known[0], known[1]


def check_window(op: Op, window: TensorInfo, frame_size: int | None) -> None:
    if not window.shape.rank_is_static:
        return
    check(window.shape.rank == 1, "window-shape", f"window must be a 1-D tensor, found shape {window.shape}",
          port=op.port("window"))
    length = window.shape[0]
    check(length.max is None or length.max > 0, "window-shape", "window is empty", port=op.port("window"))
    if frame_size is not None:
        check(length.min <= frame_size, "window-shape",
              f"window has {length} values, more than frame_size {frame_size}", port=op.port("window"))


def padded_window(window: np.ndarray, frame_size: int) -> np.ndarray:
    """The window in f64, centred in frame_size values with zeros: (frame_size - length) // 2 on
    the left, the rest on the right."""
    out = np.zeros(frame_size, np.float64)
    left = (frame_size - window.shape[0]) // 2
    out[left:left + window.shape[0]] = window.astype(np.float64)
    return out


def scalar(value: np.ndarray) -> int:
    return int(np.asarray(value).reshape(-1)[0])
