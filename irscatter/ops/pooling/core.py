"""Window geometry shared by MaxPool and AvgPool, and the bins of the adaptive poolings.

A pooling input is [N, C, spatial...] with one to three spatial axes. Along each spatial axis a
window of `kernel` taps, `dilation` apart, slides by `stride` over the input padded with
`pads_begin` and `pads_end` (or the pads `auto_pad` computes). The rules, as OpenVINO's shape
inference states them (`pooling_shape_inference_util.hpp`):

* `span = (kernel - 1) * dilation + 1` must be at least 1 and at most the padded size;
* `out = floor((size + pads - span) / stride) + 1`, with `ceil` in place of `floor` when
  `rounding_type` is ceil. `ceil_torch` rounds up too, then takes the last window away when it
  would start at or past `size + pads_begin` (in the end padding), as PyTorch does;
* `same_upper` and `same_lower` pad `total = max(0, (ceil(size / stride) - 1) * stride + span - size)`,
  half (rounded down) at the start and the rest at the end for same_upper, the other way round
  for same_lower. The spec pages write `H_out = H` for these; that holds with stride 1 only,
  and OpenVINO gives ceil(H / stride) (the same padding and formula as above);
* `valid` pads nothing; `explicit` uses pads_begin and pads_end (an empty list means zeros).

With ceil rounding a last window may reach past the padded input (or start there): the taps
outside the data count as padding.

The kernels take windows as strided views: the input is padded far enough for every window,
`sliding_window_view` makes one view per spatial axis, and slicing picks every `stride`-th
window and every `dilation`-th tap. No output position is visited by a Python loop.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import IntList, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.padding import pad_constant
from irscatter.ops.common.types import arithmetic_float

AutoPad = Annotated[Literal["explicit", "same_upper", "same_lower", "valid"], Lower]
Rounding = Annotated[Literal["floor", "ceil"], Lower]
TorchRounding = Annotated[Literal["floor", "ceil", "ceil_torch"], Lower]


class PoolAttrs(OpAttrs):
    """The attributes every MaxPool and AvgPool version has, with every rounding type the shared
    code handles: the versions before -14, which lack ceil_torch, narrow it (FloorCeil)."""

    strides: IntList
    pads_begin: IntList
    pads_end: IntList
    kernel: IntList
    rounding_type: TorchRounding = "floor"
    auto_pad: AutoPad = "explicit"


class FloorCeil(PoolAttrs):
    """The rounding types of the versions before -14, mixed into their schemas."""

    rounding_type: Rounding = "floor"


@dataclass(frozen=True)
class Axis:
    """One spatial axis of a pooling: the input size, the window and the pads actually used."""

    size: int
    kernel: int
    stride: int
    dilation: int
    begin: int
    end: int
    out: int

    @property
    def span(self) -> int:
        return (self.kernel - 1) * self.dilation + 1

    @property
    def reach(self) -> int:
        """How far past the input's end the windows reach (at least pads_end)."""
        last = (self.out - 1) * self.stride + self.span if self.out else 0
        return max(self.end, last - self.begin - self.size)


def check_attributes(op: Pool, data: TensorInfo, dilations: tuple[int, ...]) -> int:
    """The checks that need no sizes; returns the number of spatial axes."""
    a = op.attrs
    spatial = len(a.kernel)
    if data.shape.rank_is_static:
        check(data.shape.rank in (3, 4, 5), "data-rank",
              f"{op.type_name} takes a 3-D, 4-D or 5-D input, found {data.shape}", port=op.port("data"))
        check(spatial == data.shape.rank - 2, "pool-attribute-size",
              f"kernel has {spatial} values for {data.shape.rank - 2} spatial axes", port=op.port("kernel"))
    for name, values in (("strides", a.strides), ("dilations", dilations)):
        check(len(values) == spatial, "pool-attribute-size", f"{name} has {len(values)} values, the kernel {spatial}",
              port=op.port(name if name in op.Attrs.model_fields else "kernel"))
    for name in ("pads_begin", "pads_end"):
        values = getattr(a, name)
        check(len(values) in (0, spatial), "pool-attribute-size",
              f"{name} has {len(values)} values, the kernel {spatial}", port=op.port(name))
        check(all(v >= 0 for v in values), "pool-attribute-value", f"{name} {list(values)} has a negative pad",
              port=op.port(name))
    check(all(k >= 1 for k in a.kernel), "pool-attribute-value", f"kernel {list(a.kernel)} has a size below 1",
          port=op.port("kernel"))
    check(all(s >= 1 for s in a.strides), "pool-attribute-value", f"strides {list(a.strides)} has a stride below 1",
          port=op.port("strides"))
    check(all(d >= 1 for d in dilations), "pool-attribute-value",
          f"dilations {list(dilations)} has a dilation below 1",
          port=op.port("dilations" if "dilations" in op.Attrs.model_fields else "kernel"))
    if data.shape.rank_is_static:
        for i, what in ((0, "batch"), (1, "channel")):
            check(not data.shape[i].is_static or int(data.shape[i]) > 0, "pool-empty-batch",
                  f"the {what} dimension of {data.shape} is zero", port=op.port("data"))
    return spatial


def geometry(op: Pool, sizes: list[int | None], dilations: tuple[int, ...]) -> list[Axis | None]:
    """Pads and output size along each spatial axis of an input of spatial `sizes` (None for
    an axis whose size is not known: its geometry is not either)."""
    a = op.attrs
    axes: list[Axis | None] = []
    for i, size in enumerate(sizes):
        if size is None:
            axes.append(None)
            continue
        k, s, d = a.kernel[i], a.strides[i], dilations[i]
        span = (k - 1) * d + 1
        if a.auto_pad in ("same_upper", "same_lower"):
            total = max(0, (-(-size // s) - 1) * s + span - size)
            small, large = total // 2, total - total // 2
            begin, end = (small, large) if a.auto_pad == "same_upper" else (large, small)
        elif a.auto_pad == "valid":
            begin = end = 0
        else:
            begin = a.pads_begin[i] if a.pads_begin else 0
            end = a.pads_end[i] if a.pads_end else 0
        op.check_pads(span, begin, end, i)
        padded = size + begin + end
        check(span <= padded, "pool-window-size",
              f"the kernel spans {span} along spatial axis {i}, more than the padded input's {padded}",
              port=op.port("kernel"))
        if a.rounding_type == "floor":
            out = (padded - span) // s + 1
        else:
            out = -(-(padded - span) // s)
            # ceil_torch drops a last window that would start in the end padding; OpenVINO keeps
            # it when size + pads_begin is 0 (its unsigned arithmetic wraps there)
            if a.rounding_type == "ceil" or out * s < size + begin or size + begin == 0:
                out += 1
        axes.append(Axis(size, k, s, d, begin, end, out))
    return axes


def output_shape(op: Pool, data: TensorInfo, dilations: tuple[int, ...]) -> PartialShape:
    """Inference: the checks, and the output shape (a dynamic spatial size stays dynamic)."""
    spatial = check_attributes(op, data, dilations)
    if not data.shape.rank_is_static:
        return PartialShape.of([Dimension.dynamic()] * (spatial + 2))
    sizes = [int(d) if d.is_static else None for d in data.shape.ranked_dims[2:]]
    outs = [Dimension.dynamic() if ax is None else Dimension.static(ax.out) for ax in geometry(op, sizes, dilations)]
    return PartialShape.of(list(data.shape.ranked_dims[:2]) + outs)


def check_pool_type(op: Op, etype: ElementType, integers: bool) -> None:
    """Floats, and integers where the op takes them; never booleans, strings or packed codes."""
    ok = arithmetic_float(etype) or (integers and etype.is_integral and not etype.is_packed)
    check(etype is ElementType.dynamic or ok, "float-type" if not integers else "numeric-type",
          f"{op.type_name} is not defined for {etype} tensors (it takes a floating-point"
          f"{' or integer' if integers else ''} type)", port=op.port("data"))


class Windows(list):
    """The axes of a pooling over one input shape (a list of `Axis`), with what every call of a
    kernel derives from them worked out on first use and kept: on the small tensors of a real
    model that bookkeeping costs as much as the arithmetic."""

    @functools.cached_property
    def widths(self) -> tuple[tuple[int, int], ...] | None:
        """The (before, after) padding of each spatial axis; None when the windows tile the input."""
        widths = tuple((ax.begin, ax.reach) for ax in self)
        return widths if any(b or e for b, e in widths) else None

    @functools.cached_property
    def picks(self) -> tuple[tuple, ...]:
        """For each tap in row-major order, the index of its strided view of a `padded` array
        (any number of leading axes): one view of the whole output a tap."""
        picks = []
        for tap in itertools.product(*(range(ax.kernel) for ax in self)):
            picks.append((Ellipsis, *(slice(t * ax.dilation,
                                            t * ax.dilation + (ax.out - 1) * ax.stride + 1 if ax.out else 0, ax.stride)
                                      for t, ax in zip(tap, self))))
        return tuple(picks)

    @functools.cached_property
    def axis_picks(self) -> tuple[tuple[slice, ...], ...]:
        """For each spatial axis, the strided slice of a `padded` array along that axis that
        holds each tap along it (a window's taps along one axis, for separable kernels)."""
        return tuple(tuple(slice(t * ax.dilation, t * ax.dilation + (ax.out - 1) * ax.stride + 1 if ax.out else 0,
                                 ax.stride) for t in range(ax.kernel)) for ax in self)

    @functools.cached_property
    def derived(self) -> dict:
        """Room for a kernel to keep what it works out from these axes (AvgPool's divisors)."""
        return {}


def as_windows(axes: list[Axis]) -> Windows:
    return axes if isinstance(axes, Windows) else Windows(axes)


def padded(array: np.ndarray, axes: list[Axis], fill) -> np.ndarray:
    """`array` ([N, C, spatial...] or [spatial...]) padded with `fill` far enough for every window."""
    widths = as_windows(axes).widths
    if widths is None:
        return array  # no copy when the windows tile the input
    return pad_constant(array, [(0, 0)] * (array.ndim - len(axes)) + list(widths), fill)


def tap_picks(axes: list[Axis]) -> tuple[tuple, ...]:
    """For each tap of the window in row-major order, the index (an Ellipsis, then strided
    slices of the spatial axes) of a `padded` array that holds that tap of every window: a
    kernel visits a few taps, each a view of the whole output, instead of the windows one by
    one. Worked out once per geometry."""
    return as_windows(axes).picks


def windows(array: np.ndarray, axes: list[Axis]) -> np.ndarray:
    """The windows of a `padded` array as a view [..., out..., kernel...]: one window per output
    position, holding its `kernel` taps along each spatial axis."""
    lead = array.ndim - len(axes)
    spans = tuple(ax.span for ax in axes)
    view = sliding_window_view(array, spans, axis=tuple(range(lead, array.ndim)))
    picks = (tuple(slice(None) for _ in range(lead))
             + tuple(slice(0, (ax.out - 1) * ax.stride + 1 if ax.out else 0, ax.stride) for ax in axes)
             + tuple(slice(None, None, ax.dilation) for ax in axes))
    return view[picks]


def flat_windows(array: np.ndarray, axes: list[Axis]) -> np.ndarray:
    """`windows` with the taps of each window on one last axis, in row-major tap order."""
    view = windows(array, axes)
    return view.reshape(view.shape[:view.ndim - len(axes)] + (math.prod(ax.kernel for ax in axes),))


def in_data(axes: list[Axis]) -> np.ndarray:
    """[out..., taps]: whether each tap of each window falls on the data (not in padding)."""
    inside = np.ones(tuple(ax.size for ax in axes), dtype=bool)
    return flat_windows(padded(inside, axes, False), axes)


# --- adaptive pooling ---------------------------------------------------------------------------


def bins(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Adaptive bins along one axis: bin i is [floor(i * size / out), ceil((i + 1) * size / out))."""
    i = np.arange(out, dtype=np.int64)
    return i * size // out, -((-(i + 1) * size) // out)


def by_bin_length(size: int, out: int):
    """The bins of one axis grouped by length: (length, bin numbers, their starts) per length.
    Bins take one or two lengths, so a kernel loops over very few groups."""
    start, end = bins(size, out)
    length = end - start
    for n in np.unique(length):
        chosen = np.nonzero(length == n)[0]
        yield int(n), chosen, start[chosen]


def check_output_size(op: Op, data: TensorInfo, size: TensorInfo) -> PartialShape:
    """Inference of the adaptive poolings: [N, C] followed by the output size input's values."""
    port = op.port("output_size")
    check(size.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "output-size-type",
          f"output_size must be i32 or i64, found {size.etype}", port=port)
    if size.shape.rank_is_static:
        check(size.shape.rank == 1, "output-size-shape", f"output_size must be a 1-D tensor, found {size.shape}",
              port=port)
    if not data.shape.rank_is_static:
        return PartialShape.dynamic_rank()
    rank = data.shape.rank
    check(rank in (3, 4, 5), "data-rank", f"{op.type_name} takes a 3-D, 4-D or 5-D input, found {data.shape}",
          port=op.port("data"))
    if size.shape.rank_is_static:
        check(size.shape[0].contains(rank - 2), "output-size-shape",
              f"output_size has shape {size.shape}, the input {rank - 2} spatial axes", port=port)
    if size.value is None:
        return PartialShape.of(list(data.shape.ranked_dims[:2]) + [Dimension.dynamic()] * (rank - 2))
    values = [int(v) for v in np.asarray(size.value).reshape(-1)]
    spatial = [data.shape[i] for i in range(2, rank)]
    check_sizes(op, values, [int(d) if d.is_static else None for d in spatial])
    return PartialShape.of([*data.shape.ranked_dims[:2], *values])


def check_sizes(op: Op, values: list[int], spatial: list[int | None]) -> None:
    port = op.port("output_size")
    for v, d in zip(values, spatial):
        check(v >= 0, "output-size-value", f"output_size {values} has a negative size", port=port)
        check(d is None or d > 0 or v == 0, "output-size-value",
              f"output_size {values} asks for bins over an empty input axis (a bin with no element)", port=port)


def runtime_sizes(op: Op, data: np.ndarray, size: np.ndarray) -> list[int]:
    """The output size input's values, checked against the data, and against the allocation
    limit for every tensor the separable passes make: the output, and each partial result,
    which holds some axes binned and the others whole (larger than both input and output when
    one axis is upsampled and the next is long)."""
    values = [int(v) for v in np.asarray(size).reshape(-1)]
    check(len(values) == data.ndim - 2, "output-size-shape",
          f"output_size has {len(values)} values, the input {data.ndim - 2} spatial axes", port=op.port("output_size"))
    check_sizes(op, values, list(data.shape[2:]))
    lead, spatial = data.shape[:2], data.shape[2:]
    for k in range(len(values) + 1):  # binned from the first axis on, and from the last axis back
        check_allocation(lead + tuple(values[:k]) + spatial[k:], 8)
        check_allocation(lead + spatial[:len(values) - k] + tuple(values[len(values) - k:]), 8)
    return values


def empty_bins(data: np.ndarray, sizes: list[int]) -> tuple[int, ...] | None:
    """The output shape of an adaptive pooling when it holds no element (None otherwise): such
    an output is made directly, without the bin tables, which grow with the output's spatial
    size alone and are not held to the limit when there is no batch or no channel."""
    shape = data.shape[:2] + tuple(sizes)
    return shape if 0 in shape else None


class Pool(Op):
    """What MaxPool and AvgPool share: one data input, the window attributes, the geometry."""

    attrs: PoolAttrs
    inputs = ("data",)

    def dilations(self) -> tuple[int, ...]:
        """The versions without a dilations attribute take adjacent taps."""
        return (1,) * len(self.attrs.kernel)

    def check_pads(self, span: int, begin: int, end: int, axis: int) -> None:
        """A rule on the pads an op adds to the common ones (AvgPool's exclude-pad rule)."""

    def axes(self, data: np.ndarray) -> Windows:
        """The geometry for an input of this shape (worked out once per shape)."""
        return self.per_shape(data.shape, lambda: Windows(geometry(self, list(data.shape[2:]), self.dilations())))
