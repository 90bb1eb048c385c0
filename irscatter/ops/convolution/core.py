"""What every convolution shares: attribute checks, auto_pad resolution, output sizes, padding,
a strided and dilated window view, the element-type rules, the two kernels and the op classes of
the forward and transposed convolutions. Nothing here registers an op.

Layouts: data is [N, C, *spatial] (1, 2 or 3 spatial axes), so the spatial axes are the trailing
`len(strides)` axes of every array handed to these functions. Unknown (dynamic) sizes are `None`.

Geometry of a forward convolution (Convolution, GroupConvolution, BinaryConvolution,
DeformableConvolution):

    check_attrs(op, n, strides=..., dilations=..., pads_begin=..., pads_end=..., auto_pad=...)
    begin, end = forward_pads(auto_pad, in_dims, kernel, strides, dilations, pads_begin, pads_end)
    out_dims = forward_output_dims(auto_pad, in_dims, kernel, strides, dilations, begin, end)
    check_window(op, in_dims, kernel, dilations, begin, end)      # explicit and valid only

Kernels:

* `grouped_convolution` / `grouped_transposed`: one batched matrix product per kernel offset over
  the outputs whose tap lies inside the input, so taps in the padding contribute nothing (as
  OpenVINO computes: an infinite weight there gives no NaN). Convolution, GroupConvolution and
  the two backprop-data ops use them; the forward ones only for integers and non-finite filters.
* `plans.plan_forward`: the formulation a float forward convolution with finite filters takes
  for its shape (pointwise, im2col, depthwise taps, or with numba their compiled loop), worked
  out once per shape.
* `pad_spatial` + `windows`: for an op whose padding has a value (BinaryConvolution's pad_value)
  or that samples each window itself: pad, then take a [N, C, *out, *kernel] view, no copy:

      win = windows(pad_spatial(data, begin, end, value), kernel, strides, dilations)

The `check_*` helpers raise the shared `conv-*` labels of `irscatter.labels.SHARED`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, overload

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IntList, Lower, Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.padding import pad_constant
from irscatter.ops.common.types import same_element_type
from irscatter.ops.convolution.kernels import grouped_convolution, grouped_transposed
from irscatter.ops.convolution.plan_base import Finish
from irscatter.ops.convolution.plans import Plan, plan_forward

AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")
Size = int | None  # a spatial size, None when unknown


@overload
def dilated(kernel: int, dilation: int) -> int: ...


@overload
def dilated(kernel: Size, dilation: int) -> Size: ...


def dilated(kernel: Size, dilation: int) -> Size:
    """The extent a kernel of `kernel` taps covers with `dilation`: (kernel - 1) * dilation + 1."""
    return None if kernel is None else (kernel - 1) * dilation + 1


def sizes(dims: Sequence[Dimension]) -> list[Size]:
    """Static dimensions as ints, the others as None."""
    return [int(d) if d.is_static else None for d in dims]


def check_attrs(op: Op, num_spatial: int, *, strides: Sequence[int], dilations: Sequence[int],
                pads_begin: Sequence[int], pads_end: Sequence[int], auto_pad: str,
                output_padding: Sequence[int] | None = None) -> None:
    """The attribute rules of every convolution for `num_spatial` spatial axes (1, 2 or 3):
    one value per spatial axis in strides, dilations, pads (and output_padding when given),
    strides and dilations of 1 or more, explicit pads and output_padding of 0 or more. The op's schema must name
    these attributes as `strides`, `dilations`, `pads_begin`, `pads_end`, `output_padding`.

    Empty pads stand for zeros, as in OpenVINO. Pads of an auto_pad other than explicit are
    ignored (the specs say so), so only their length is held against them, not their sign.
    """
    named = {"strides": strides, "dilations": dilations, "pads_begin": pads_begin, "pads_end": pads_end}
    if output_padding is not None:
        named["output_padding"] = output_padding
    for name, values in named.items():
        if name in ("pads_begin", "pads_end") and not values:
            continue
        check(len(values) == num_spatial, "conv-attribute-length",
              f"{name} has {len(values)} values, the data has {num_spatial} spatial axes", port=op.port(name))
    for name in ("strides", "dilations"):
        check(all(v >= 1 for v in named[name]), "conv-attribute-range",
              f"{name} {list(named[name])} must be 1 or more", port=op.port(name))
    lower = ["pads_begin", "pads_end"] if auto_pad == "explicit" else []
    lower += ["output_padding"] if output_padding is not None else []
    for name in lower:
        check(all(v >= 0 for v in named[name]), "conv-attribute-range",
              f"{name} {list(named[name])} must be 0 or more", port=op.port(name))


def check_spatial_rank(op: Op, info: TensorInfo, port_name: str, offset: int = 2) -> None:
    """`info` has 1, 2 or 3 spatial axes after its `offset` leading non-spatial axes."""
    if info.shape.rank_is_static:
        check(offset + 1 <= info.shape.rank <= offset + 3, "conv-rank",
              f"{port_name} must have rank {offset + 1}, {offset + 2} or {offset + 3}, found {info.shape}",
              port=op.port(port_name))


def forward_pads(auto_pad: str, in_dims: Sequence[Size], kernel: Sequence[Size], strides: Sequence[int],
                 dilations: Sequence[int], pads_begin: Sequence[int], pads_end: Sequence[int],
                 ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The pads a forward convolution applies before and after each spatial axis.

    explicit: the attributes; valid: zeros; same_upper/same_lower: the total padding that
    makes the output ceil(in / stride) long, max(0, (out - 1) * stride + dilated kernel - in),
    split in two with the odd element at the end (same_upper) or at the beginning (same_lower).
    An axis whose input or kernel size is unknown gets zero pads, as in OpenVINO.
    """
    n = len(strides)
    if auto_pad == "explicit":
        return tuple(pads_begin) or (0,) * n, tuple(pads_end) or (0,) * n
    if auto_pad == "valid":
        return (0,) * n, (0,) * n
    begin, end = [], []
    for i in range(n):
        size, taps = in_dims[i], kernel[i]
        if size is None or taps is None:
            small = large = 0
        else:
            out = -(-size // strides[i])
            total = max(0, (out - 1) * strides[i] + dilated(taps, dilations[i]) - size)
            small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "same_upper" else large)
        end.append(large if auto_pad == "same_upper" else small)
    return tuple(begin), tuple(end)


def forward_output_dims(auto_pad: str, in_dims: Sequence[Size], kernel: Sequence[Size], strides: Sequence[int],
                        dilations: Sequence[int], begin: Sequence[int], end: Sequence[int]) -> list[Size]:
    """Output spatial sizes of a forward convolution: ceil(in / stride) for same_upper and
    same_lower, else floor((in + begin + end - dilated kernel) / stride) + 1. The result can be
    0 or negative when the dilated kernel does not fit the padded input: see `check_window`."""
    out: list[Size] = []
    for i, s in enumerate(strides):
        size, taps = in_dims[i], kernel[i]
        if size is None:
            out.append(None)
        elif auto_pad in ("same_upper", "same_lower"):
            out.append(-(-size // s))
        elif taps is None:
            out.append(None)
        else:
            out.append((size + begin[i] + end[i] - dilated(taps, dilations[i])) // s + 1)
    return out


def check_window(op: Op, in_dims: Sequence[Size], kernel: Sequence[Size], dilations: Sequence[int],
                 begin: Sequence[int], end: Sequence[int], port_name: str = "data") -> None:
    """The dilated kernel fits in the padded input along every axis (both sizes known)."""
    for i, d in enumerate(dilations):
        size, taps = in_dims[i], kernel[i]
        if size is not None and taps is not None:
            padded, window = size + begin[i] + end[i], dilated(taps, d)
            check(0 < window <= padded, "conv-window",
                  f"spatial axis {i}: the dilated kernel ({window}) is larger than the padded input ({padded})",
                  port=op.port(port_name))


def backprop_pads(auto_pad: str, in_dims: Sequence[Size], kernel: Sequence[Size], strides: Sequence[int],
                  dilations: Sequence[int], output_padding: Sequence[int], pads_begin: Sequence[int],
                  pads_end: Sequence[int], output_shape: Sequence[Size] | None = None,
                  ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The pads a transposed convolution crops from its full output (its "backward" padding).

    Without `output_shape`: explicit gives the attributes, every other auto_pad zeros.
    With `output_shape`, by the spec: the total padding is
    stride * (in - 1) + dilated kernel - output_shape + output_padding, split with the larger
    half at the beginning for same_upper and at the end otherwise (explicit, valid and
    same_lower alike; the spec says pads_begin and pads_end are then ignored). A negative total
    means the output is larger than the full result: the extra elements are at the end
    (begin 0). An axis with an unknown size gets zero pads.
    """
    n = len(strides)
    if output_shape is None:
        if auto_pad == "explicit":
            return tuple(pads_begin) or (0,) * n, tuple(pads_end) or (0,) * n
        return (0,) * n, (0,) * n
    begin, end = [], []
    for i in range(n):
        size, taps, wanted = in_dims[i], kernel[i], output_shape[i]
        if size is None or taps is None or wanted is None:
            begin.append(0)
            end.append(0)
            continue
        total = strides[i] * (size - 1) + dilated(taps, dilations[i]) - wanted + output_padding[i]
        small = max(total, 0) // 2
        head = max(total, 0) - small if auto_pad == "same_upper" else small
        begin.append(head)
        end.append(total - head)
    return tuple(begin), tuple(end)


def backprop_output_dims(in_dims: Sequence[Size], kernel: Sequence[Size], strides: Sequence[int],
                         dilations: Sequence[int], output_padding: Sequence[int], begin: Sequence[int],
                         end: Sequence[int]) -> list[Size]:
    """Output spatial sizes of a transposed convolution without an output_shape input:
    stride * (in - 1) + dilated kernel - begin - end + output_padding (may be 0 or negative
    when the pads crop everything; the caller checks)."""
    out: list[Size] = []
    for i, s in enumerate(strides):
        size, taps = in_dims[i], kernel[i]
        if size is None or taps is None:
            out.append(None)
        else:
            out.append(s * (size - 1) + dilated(taps, dilations[i]) - begin[i] - end[i] + output_padding[i])
    return out


def pad_spatial(x: np.ndarray, begin: Sequence[int], end: Sequence[int], value=0) -> np.ndarray:
    """`x` with `value` added before and after its trailing len(begin) axes (a new array; `x`
    itself when there is nothing to add). Pads must be 0 or more."""
    return pad_constant(x, [(0, 0)] * (x.ndim - len(begin)) + list(zip(begin, end)), value)


def windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int]) -> np.ndarray:
    """A read-only view [*lead, *out, *kernel] of `x` [*lead, *spatial] (already padded): element
    [..., o..., k...] is x[..., o * stride + k * dilation, ...], for every output position o
    whose dilated window fits. No copy is made: contract it with np.einsum or np.tensordot."""
    n = len(kernel)
    spans = [dilated(k, d) for k, d in zip(kernel, dilations)]
    if any(x.shape[x.ndim - n + i] < spans[i] for i in range(n)):
        # no window fits: an empty view of the right rank
        out = [max(0, (x.shape[x.ndim - n + i] - spans[i]) // strides[i] + 1) for i in range(n)]
        return np.zeros(x.shape[:x.ndim - n] + tuple(out) + tuple(kernel), dtype=x.dtype)
    view = sliding_window_view(x, spans, axis=tuple(range(x.ndim - n, x.ndim)))
    lead = (slice(None),) * (x.ndim - n)
    return view[lead + tuple(slice(None, None, s) for s in strides) + tuple(slice(None, None, d) for d in dilations)]


# --- element types ----------------------------------------------------------------------------

# The types the convolutions compute: the spec's "any numeric type", less the packed and 8-bit
# float types (OpenVINO's reference evaluates none of the latter; its u1/i4/u4 kernels are left out).
COMPUTED_TYPES = (ElementType.f16, ElementType.bf16, ElementType.f32, ElementType.f64,
                  ElementType.i8, ElementType.i16, ElementType.i32, ElementType.i64,
                  ElementType.u8, ElementType.u16, ElementType.u32, ElementType.u64)


def check_element_types(op: Op, data: TensorInfo, filters: TensorInfo) -> ElementType:
    """Data and filters share one element type, one of COMPUTED_TYPES; returns it."""
    etype = same_element_type(data, filters, "data and filters must have the same element type",
                              "same-element-type", op.port("filters"))
    check(etype is ElementType.dynamic or etype in COMPUTED_TYPES, "conv-type",
          f"{op.type_name} is not computed for {etype} tensors (it takes f16, bf16, f32, f64 and 8- to 64-bit "
          "integers)", port=op.port("data"))
    return etype


def work_dtype(etype: ElementType) -> np.dtype:
    """The dtype products are summed in: f32 for f16/bf16 (f32 and f64 as they are), and 64-bit
    integers for integers, whose sums then wrap to the element type exactly as sums wrapping at
    every step in the element type would (arithmetic modulo 2^bits)."""
    if etype.is_float:
        return compute_dtype(etype)
    return np.dtype(np.int64) if etype.is_signed else np.dtype(np.uint64)


def to_element_type(result: np.ndarray, etype: ElementType) -> np.ndarray:
    """A result in `work_dtype` rounded once (floats) or wrapped (integers) to `etype`."""
    if etype.is_float:
        return from_compute(result, etype)
    return result.astype(etype.dtype)


AutoPad = Annotated[Literal["explicit", "valid", "same_upper", "same_lower"], Lower]


class ConvolutionAttrs(OpAttrs):
    """Convolution-1 and GroupConvolution-1 (the spec marks all but auto_pad required)."""

    strides: IntList
    pads_begin: IntList
    pads_end: IntList
    dilations: IntList
    auto_pad: AutoPad = "explicit"


class BackpropAttrs(OpAttrs):
    """ConvolutionBackpropData-1 and GroupConvolutionBackpropData-1: the pads "may be omitted"
    (zeros), output_padding defaults to zeros."""

    strides: IntList
    pads_begin: IntList = ()
    pads_end: IntList = ()
    dilations: IntList
    auto_pad: AutoPad = "explicit"
    output_padding: IntList = ()


def _spatial_count(op: ForwardConvolution | TransposedConvolution, data: TensorInfo, filters: TensorInfo, filter_lead: int) -> int | None:
    """How many spatial axes the layer has: from the data's rank, else the filters', else the
    attributes; the rank checks of both inputs."""
    check_spatial_rank(op, data, "data")
    if data.shape.rank_is_static:
        n = data.shape.rank - 2
    elif filters.shape.rank_is_static:
        n = filters.shape.rank - filter_lead
    else:
        n = len(op.attrs.strides)
        return n if 1 <= n <= 3 else None
    if filters.shape.rank_is_static:
        check(filters.shape.rank == n + filter_lead, "conv-filter-rank",
              f"the filters must have rank {n + filter_lead} for {n} spatial axes, found {filters.shape}",
              port=op.port("filters"))
    check(1 <= n <= 3, "conv-rank", f"the filters give {n} spatial axes, not 1, 2 or 3", port=op.port("filters"))
    return n


def _dims(info: TensorInfo, n: int) -> list[Size]:
    return sizes(info.shape.ranked_dims[-n:]) if info.shape.rank_is_static else [None] * n


def _lead(info: TensorInfo, k: int) -> Dimension:
    return info.shape.ranked_dims[k] if info.shape.rank_is_static else Dimension.dynamic()


def check_kernel(op: Op, kernel: Sequence[Size]) -> None:
    """Every spatial size of the filters is 1 or more."""
    check(all(k is None or k >= 1 for k in kernel), "conv-window",
          f"the filters' spatial sizes {kernel} must be 1 or more", port=op.port("filters"))


def _group_channels(op: Op, data: TensorInfo, filters: TensorInfo, grouped: bool, c_in_axis: int,
                    c_out_axis: int) -> Dimension:
    """Checks that the data's channels are groups * C_IN; returns the output's channel dim."""
    channels = _lead(data, 1)
    if not grouped:
        check(channels.compatible(_lead(filters, c_in_axis)), "conv-channels",
              f"the data has {channels} channels, the filters take {_lead(filters, c_in_axis)}",
              port=op.port("filters"))
        return _lead(filters, c_out_axis)
    groups, c_in, c_out = _lead(filters, 0), _lead(filters, c_in_axis), _lead(filters, c_out_axis)
    if channels.is_static and c_in.is_static:
        if groups.is_static:
            check(int(channels) == int(groups) * int(c_in), "conv-channels",
                  f"the data has {channels} channels, the filters take {groups} groups of {c_in}",
                  port=op.port("filters"))
        elif int(c_in):
            check(int(channels) % int(c_in) == 0, "conv-channels",
                  f"the data's {channels} channels do not split into groups of {c_in}", port=op.port("filters"))
            groups = Dimension.static(int(channels) // int(c_in))
    if groups.is_static and c_out.is_static:
        return Dimension.static(int(groups) * int(c_out))
    return Dimension.dynamic()


class ForwardConvolution(Op):
    """Convolution-1 (`grouped = False`: filters [C_OUT, C_IN, *k]) and GroupConvolution-1
    (`grouped = True`: filters [GROUPS, C_OUT, C_IN, *k], data channels GROUPS * C_IN)."""

    Attrs = ConvolutionAttrs
    attrs: ConvolutionAttrs
    inputs: ClassVar[tuple[str, ...]] = ("data", "filters")  # ConvolutionBiased adds a bias
    grouped: bool = False

    def _geometry(self, in_dims: Sequence[Size], kernel: Sequence[Size]):
        a = self.attrs
        begin, end = forward_pads(a.auto_pad, in_dims, kernel, a.strides, a.dilations, a.pads_begin, a.pads_end)
        return begin, end, forward_output_dims(a.auto_pad, in_dims, kernel, a.strides, a.dilations, begin, end)

    def _finite(self, filters: np.ndarray, work: np.ndarray) -> bool:
        """Whether the filters (`work`: in the work dtype) are all finite, worked out once for
        a Const's filters."""
        return self.per_constant("finite", (filters,),
                                 lambda: bool(np.isfinite(work).all()) if work.dtype.kind == "f" else True)

    def infer(self, data: TensorInfo, filters: TensorInfo) -> TensorInfo:
        etype = check_element_types(self, data, filters)
        lead = 3 if self.grouped else 2
        n = _spatial_count(self, data, filters, lead)
        if n is None:
            return TensorInfo(etype, PartialShape.dynamic_rank())
        a = self.attrs
        check_attrs(self, n, strides=a.strides, dilations=a.dilations, pads_begin=a.pads_begin,
                    pads_end=a.pads_end, auto_pad=a.auto_pad)
        channels = _group_channels(self, data, filters, self.grouped, lead - 1, lead - 2)
        in_dims, kernel = _dims(data, n), _dims(filters, n)
        check_kernel(self, kernel)
        begin, end, out = self._geometry(in_dims, kernel)
        if a.auto_pad in ("explicit", "valid"):
            check_window(self, in_dims, kernel, a.dilations, begin, end)
        out_dims = [Dimension.static(d) if d is not None else Dimension.dynamic() for d in out]
        return TensorInfo(etype, PartialShape.of([_lead(data, 0), channels, *out_dims]))

    def _plan(self, data: np.ndarray, filters: np.ndarray) -> _ForwardPlan:
        etype = ElementType.from_dtype(data.dtype)
        work = work_dtype(etype)
        w_shape = filters.shape if self.grouped else (1, *filters.shape)  # [G, C_OUT, C_IN, *k]
        groups, c_in = w_shape[0], w_shape[2]
        begin, _, out_dims = self._geometry(data.shape[2:], w_shape[3:])
        x_shape = (data.shape[0], groups, c_in, *data.shape[2:])
        fast = plan_forward(x_shape, w_shape, work, self.attrs.strides, self.attrs.dilations, begin, out_dims)
        return _ForwardPlan(etype, work, x_shape, w_shape, begin, out_dims,
                            (data.shape[0], groups * w_shape[1], *out_dims), fast)

    def convolve(self, data: np.ndarray, filters: np.ndarray) -> tuple[np.ndarray, _ForwardPlan]:
        """The result in the work dtype, shaped as the output, before its one rounding (what a
        biased convolution adds its bias to), and the plan that gives its element type."""
        plan = self._shape_plan(data, filters)
        x = data.reshape(plan.x_shape).astype(plan.work, copy=False)
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf, inf * 0: IEEE answers
            w = filters.reshape(plan.w_shape).astype(plan.work, copy=False)
            if plan.fast is not None and self._finite(filters, w):
                out = plan.fast(x, self._prepared(plan.fast, filters, w))
            else:
                out = grouped_convolution(x, w, self.attrs.strides, self.attrs.dilations, plan.begin, plan.out_dims)
        return out.reshape(plan.out_shape), plan

    def finishing(self, data: np.ndarray, filters: np.ndarray, finish: Finish) -> np.ndarray | None:
        """The output of a layer whose type is its work dtype (f32, f64), each block handed to
        `finish` as the plan's part writes it (`plan_base.Finish`); None, with nothing computed,
        where the plan for the shape finishes no blocks."""
        plan = self._shape_plan(data, filters)
        if plan.fast is None or not plan.fast.finishes or plan.work != data.dtype or plan.work != filters.dtype:
            return None
        w = filters.reshape(plan.w_shape)
        if not self._finite(filters, w):
            return None
        with np.errstate(invalid="ignore", over="ignore"):
            out = plan.fast.finishing(data.reshape(plan.x_shape), self._prepared(plan.fast, filters, w), finish)
        return out.reshape(plan.out_shape)

    def _shape_plan(self, data: np.ndarray, filters: np.ndarray) -> _ForwardPlan:
        return self.per_shape((data.shape, filters.shape, data.dtype), lambda: self._plan(data, filters))

    def _prepared(self, fast: Plan, filters: np.ndarray, w: np.ndarray) -> Any:
        # keyed by the plan object itself, which the cache then holds: one entry per shape
        return self.per_constant(fast, (filters,), lambda: fast.prepare(w))

    def compute(self, data: np.ndarray, filters: np.ndarray) -> np.ndarray:
        out, plan = self.convolve(data, filters)
        return to_element_type(out, plan.etype)


@dataclass(frozen=True)
class _ForwardPlan:
    """What a forward convolution works out once per input shape and dtype."""

    etype: ElementType
    work: np.dtype
    x_shape: tuple[int, ...]  # the data as [N, G, C_IN, *in]
    w_shape: tuple[int, ...]  # the filters as [G, C_OUT, C_IN, *kernel]
    begin: Sequence[int]
    out_dims: Sequence[int]
    out_shape: tuple[int, ...]
    fast: Plan | None  # None: integers, or nothing to compute (the per-offset kernel)


class TransposedConvolution(Op):
    """ConvolutionBackpropData-1 (`grouped = False`: filters [C_IN, C_OUT, *k]) and
    GroupConvolutionBackpropData-1 (`grouped = True`: filters [GROUPS, C_IN, C_OUT, *k]), with
    the optional output_shape input (the output's spatial sizes)."""

    Attrs = BackpropAttrs
    attrs: BackpropAttrs
    inputs = ("data", "filters", "output_shape")
    optional_inputs = 1
    grouped: bool = False

    def _output_padding(self, n: int) -> tuple[int, ...]:
        return self.attrs.output_padding or (0,) * n

    def _geometry(self, in_dims: Sequence[Size], kernel: Sequence[Size], output_shape: Sequence[Size] | None):
        a, n = self.attrs, len(in_dims)
        begin, end = backprop_pads(a.auto_pad, in_dims, kernel, a.strides, a.dilations, self._output_padding(n),
                                   a.pads_begin, a.pads_end, output_shape)
        if output_shape is not None:
            return begin, list(output_shape)
        return begin, backprop_output_dims(in_dims, kernel, a.strides, a.dilations, self._output_padding(n),
                                           begin, end)

    def infer(self, data: TensorInfo, filters: TensorInfo, output_shape: TensorInfo | None = None) -> TensorInfo:
        etype = check_element_types(self, data, filters)
        lead = 3 if self.grouped else 2
        n = _spatial_count(self, data, filters, lead)
        shape_values = None
        if output_shape is not None:
            port = self.port("output_shape")
            check(output_shape.etype is ElementType.dynamic or output_shape.etype.is_integral, "conv-output-shape",
                  f"output_shape must be of an integer type, found {output_shape.etype}", port=port)
            if output_shape.shape.rank_is_static:
                check(output_shape.shape.rank == 1, "conv-output-shape",
                      f"output_shape must be a 1-D tensor, found {output_shape.shape}", port=port)
                if n is None and output_shape.shape[0].is_static:
                    n = int(output_shape.shape[0])
                if n is not None:
                    check(output_shape.shape[0].compatible(Dimension.static(n)), "conv-output-shape",
                          f"output_shape must hold {n} spatial sizes, found shape {output_shape.shape}", port=port)
            if output_shape.value is not None:
                shape_values = self._shape_values(output_shape.value, port)
        if n is None:
            return TensorInfo(etype, PartialShape.dynamic_rank())
        a = self.attrs
        check_attrs(self, n, strides=a.strides, dilations=a.dilations, pads_begin=a.pads_begin,
                    pads_end=a.pads_end, auto_pad=a.auto_pad, output_padding=a.output_padding or (0,) * n)
        channels = _group_channels(self, data, filters, self.grouped, lead - 2, lead - 1)
        in_dims, kernel = _dims(data, n), _dims(filters, n)
        check_kernel(self, kernel)
        given = None
        if output_shape is not None:
            given = shape_values if shape_values is not None else [None] * n
        _, out = self._geometry(in_dims, kernel, given)
        check(all(d is None or d >= 0 for d in out), "conv-output-size",
              f"the pads leave the output spatial sizes {out}, below 0", port=self.port("data"))
        out_dims = [Dimension.static(d) if d is not None else Dimension.dynamic() for d in out]
        return TensorInfo(etype, PartialShape.of([_lead(data, 0), channels, *out_dims]))

    def _shape_values(self, value: np.ndarray, port: str, at_runtime: bool = False) -> list[int]:
        values = [int(v) for v in np.asarray(value).reshape(-1)]
        if any(v < 0 for v in values):
            message = f"output_shape {values} holds a negative size"
            if at_runtime:
                raise ExecutionError(message, port=port, label="conv-output-shape")
            fail("conv-output-shape", message, port=port)
        return values

    def compute(self, data: np.ndarray, filters: np.ndarray, output_shape: np.ndarray | None = None) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        work = work_dtype(etype)
        n = data.ndim - 2
        w = filters if self.grouped else filters[None]  # [G, C_IN, C_OUT, *k]
        groups, c_in = w.shape[0], w.shape[1]
        given = None
        if output_shape is not None:
            given = self._shape_values(output_shape, self.port("output_shape"), at_runtime=True)
            if len(given) != n:
                raise ExecutionError(f"output_shape must hold {n} spatial sizes, found {len(given)}",
                                     port=self.port("output_shape"), label="conv-output-shape")
        begin, out_dims = self._geometry(data.shape[2:], w.shape[3:], given)
        x = data.reshape(data.shape[0], groups, c_in, *data.shape[2:]).astype(work, copy=False)
        with np.errstate(invalid="ignore", over="ignore"):
            out = grouped_transposed(x, w.astype(work, copy=False), self.attrs.strides, self.attrs.dilations,
                                     begin, out_dims)
        return to_element_type(out.reshape(data.shape[0], groups * w.shape[2], *out_dims), etype)
