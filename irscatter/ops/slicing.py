"""Slice-8, SliceScatter-15 and StridedSlice-1: slicing with Python's rules, a view for
reading and a copy for writing.

Both take 1-D `start`, `stop`, `step` and optional `axes` (default 0..len(start)-1) and
slice exactly like Python: negative start/stop count from the end, values past either end
are clamped, a negative step walks backwards, and INT64_MAX / INT64_MIN mean "to the end".
Slice returns a view of its input; SliceScatter writes `updates` into a copy of `data`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IntList, Op, OpAttrs, TensorInfo, check, same_element_type
from irscatter.ops.registry import register

_NAMES = ("start", "stop", "step", "axes")


class PlanError(ValueError):
    """A slice specification that cannot be applied; `label` names the rule it breaks."""

    def __init__(self, label: str, message: str) -> None:
        super().__init__(message)
        self.label = label


def planned(plan, *args, port: str, at_runtime: bool):
    """Call a planner; its PlanError becomes a ValidationError during inference and an
    ExecutionError during a run, labelled and naming `port`."""
    try:
        return plan(*args)
    except PlanError as e:
        if at_runtime:
            raise ExecutionError(str(e), label=e.label, port=port) from None
        check(False, e.label, str(e), port=port)


@dataclass(frozen=True)
class SlicePlan:
    index: tuple[slice, ...]  # one slice per data axis
    shape: tuple[int, ...]  # the shape of the sliced region


def plan_slices(shape: tuple[int, ...], start, stop, step, axes=None) -> SlicePlan:
    """Python slicing per listed axis; raises PlanError."""
    rank = len(shape)
    start, stop, step = (np.asarray(v).reshape(-1).astype(np.int64) for v in (start, stop, step))
    if not (len(start) == len(stop) == len(step)):
        raise PlanError("sizes", "start, stop and step must have the same number of elements")
    if axes is None:
        axes_list = list(range(len(start)))
    else:
        axes_list = [int(a) for a in np.asarray(axes).reshape(-1)]
        if len(axes_list) != len(start):
            raise PlanError("sizes", "axes must have as many elements as start, stop and step")
    if len(start) > rank:
        raise PlanError("sizes", f"{len(start)} slice parameters for a rank-{rank} tensor")
    index = [slice(None)] * rank
    seen = set()
    for a, b, e, s in zip(axes_list, start, stop, step):
        if not -rank <= a < rank:
            raise PlanError("axis-range", f"axis {a} is out of the range [{-rank}, {rank - 1}]")
        a %= rank
        if a in seen:
            raise PlanError("axes-unique", f"axis {a} is listed twice")
        seen.add(a)
        if s == 0:
            raise PlanError("step-nonzero", "step values must be non-zero")
        index[a] = slice(int(b), int(e), int(s))
    out_shape = tuple(len(range(*sl.indices(n))) for sl, n in zip(index, shape))
    return SlicePlan(tuple(index), out_shape)


def _check_params(infos: list[TensorInfo | None], first_port: int) -> None:
    lengths = []
    for offset, (name, info) in enumerate(zip(_NAMES, infos)):
        if info is None:
            continue
        port = f"input {first_port + offset}"
        check(info.etype is ElementType.dynamic or info.etype.is_integral, f"{name}-type",
              f"{name} must be of an integer type, found {info.etype}", port=port)
        if info.shape.rank_is_static:
            check(info.shape.rank == 1, f"{name}-rank", f"{name} must be a 1-D tensor, found shape {info.shape}", port=port)
            lengths.append(info.shape[0])
    for d in lengths[1:]:
        check(d.compatible(lengths[0]), "sizes",
              f"start, stop, step{' and axes' if len(lengths) == 4 else ''} must have the same number of elements")


def _known(infos: list[TensorInfo | None]) -> bool:
    return all(i is None or i.value is not None for i in infos)


def _planned_shape(data: TensorInfo, params: list[TensorInfo | None], port: str) -> PartialShape:
    """The sliced region's shape as far as it is known."""
    if not data.shape.rank_is_static:
        return PartialShape.dynamic_rank()
    if data.shape.is_static and _known(params):
        values = (p.value if p is not None else None for p in params)
        return PartialShape.of(planned(plan_slices, data.shape.to_tuple(), *values, port=port, at_runtime=False).shape)
    dims = list(data.shape.dims)
    axes = params[3]
    if axes is not None and axes.value is not None:
        for a in np.asarray(axes.value).reshape(-1):
            dims[int(a) % len(dims)] = Dimension.dynamic()
        return PartialShape.of(dims)
    n = params[0].shape[0] if params[0].shape.rank_is_static and params[0].shape.rank == 1 else None
    if n is not None and n.is_static and axes is None:
        return PartialShape.of([Dimension.dynamic()] * n.min + dims[n.min:])
    return PartialShape.of([Dimension.dynamic()] * len(dims))


@register("Slice", 8)
class Slice(Op):
    inputs = ("data", "start", "stop", "step", "axes")
    optional_inputs = 1

    def infer(self, data: TensorInfo, start: TensorInfo, stop: TensorInfo, step: TensorInfo,
              axes: TensorInfo | None = None) -> TensorInfo:
        if data.shape.rank_is_static:
            check(data.shape.rank >= 1, "data-rank", "data cannot be a scalar", port=self.port("data"))
        params = [start, stop, step, axes]
        _check_params(params, 1)
        return TensorInfo(data.etype, _planned_shape(data, params, self.port("start")))

    def compute(self, data, start, stop, step, axes=None) -> np.ndarray:
        return data[planned(plan_slices, data.shape, start, stop, step, axes, port=self.port("start"), at_runtime=True).index]


@register("SliceScatter", 15)
class SliceScatter(Op):
    inputs = ("data", "updates", "start", "stop", "step", "axes")
    optional_inputs = 1
    inplace_input = 0

    def infer(self, data: TensorInfo, updates: TensorInfo, start: TensorInfo, stop: TensorInfo, step: TensorInfo,
              axes: TensorInfo | None = None) -> TensorInfo:
        same_element_type(updates, data, "updates must have the element type of data", "updates-type", self.port("updates"))
        if data.shape.rank_is_static:
            check(data.shape.rank >= 1, "data-rank", "data cannot be a scalar", port=self.port("data"))
            if updates.shape.rank_is_static:
                check(updates.shape.rank == data.shape.rank, "updates-rank",
                      f"updates must have the rank of data ({data.shape.rank}), found {updates.shape}", port=self.port("updates"))
        params = [start, stop, step, axes]
        _check_params(params, 2)
        expected = _planned_shape(data, params, self.port("start"))
        check(expected.compatible(updates.shape), "updates-shape",
              f"updates shape {updates.shape} must equal the slice's shape {expected}", port=self.port("updates"))
        return TensorInfo(data.etype, data.shape)

    def compute(self, data, updates, start, stop, step, axes=None, *, inplace: bool = False) -> np.ndarray:
        plan = planned(plan_slices, data.shape, start, stop, step, axes, port=self.port("start"), at_runtime=True)
        if updates.shape != plan.shape:
            raise ExecutionError(f"updates shape {list(updates.shape)} must equal the slice's shape {list(plan.shape)}",
                                 port=self.port("updates"), label="updates-shape")
        out = data if inplace and data.flags.writeable else np.array(data, copy=True)
        out[plan.index] = updates
        return out


# --- StridedSlice-1 --------------------------------------------------------------------------------


class StridedSliceAttrs(OpAttrs):
    begin_mask: IntList = ()
    end_mask: IntList = ()
    new_axis_mask: IntList = ()
    shrink_axis_mask: IntList = ()
    ellipsis_mask: IntList = ()


def strided_index(shape: tuple[int, ...], begin, end, stride, attrs: StridedSliceAttrs) -> tuple:
    """The numpy index tuple a StridedSlice describes (TensorFlow-style masks; bit i of each
    mask refers to position i of begin/end/stride). Raises PlanError."""
    begin, end = (np.asarray(v).reshape(-1).astype(np.int64) for v in (begin, end))
    stride = np.ones(len(begin), np.int64) if stride is None else np.asarray(stride).reshape(-1).astype(np.int64)
    if not len(begin) == len(end) == len(stride):
        raise PlanError("sizes", "begin, end and stride must have the same number of values")
    masks = {name: getattr(attrs, name) for name in StridedSliceAttrs.model_fields}
    for name, mask in masks.items():
        if any(bit not in (0, 1) for bit in mask):
            raise PlanError("mask-values", f"{name} must hold only 0 and 1, found {list(mask)}")
    bit = {name: (lambda m: (lambda i: i < len(m) and m[i] == 1))(mask) for name, mask in masks.items()}
    if sum(bit["ellipsis_mask"](i) for i in range(len(begin))) > 1:
        raise PlanError("ellipsis", "at most one ellipsis is allowed")
    index: list = []
    consumed = sum(1 for i in range(len(begin)) if not (bit["new_axis_mask"](i) or bit["ellipsis_mask"](i)))
    if consumed > len(shape):
        raise PlanError("sizes", f"{consumed} sliced axes for a rank-{len(shape)} tensor")
    axis = 0  # the data axis position i refers to, for shrink range checks
    for i in range(len(begin)):
        flags = [n for n in ("new_axis_mask", "shrink_axis_mask", "ellipsis_mask") if bit[n](i)]
        if len(flags) > 1:
            raise PlanError("mask-conflict", f"position {i} sets {' and '.join(flags)} at once")
        if bit["new_axis_mask"](i):
            index.append(np.newaxis)
        elif bit["ellipsis_mask"](i):
            index.append(Ellipsis)
            axis += len(shape) - consumed
        elif bit["shrink_axis_mask"](i):
            dim, b = shape[axis], int(begin[i])
            if not -dim <= b < dim:
                raise PlanError("shrink-range", f"begin {b} at position {i} is outside [{-dim}, {dim - 1}] for a shrunk axis")
            index.append(b)
            axis += 1
        else:
            if stride[i] == 0:
                raise PlanError("stride-nonzero", "stride values must be non-zero")
            b = None if bit["begin_mask"](i) else int(begin[i])
            if b is not None and stride[i] < 0 and axis < len(shape) and b + shape[axis] < 0:
                b = 0  # the spec's reverse clamping: a begin before the start becomes 0, not "empty"
            index.append(slice(b, None if bit["end_mask"](i) else int(end[i]), int(stride[i])))
            axis += 1
    return tuple(index)


@register("StridedSlice", 1)
class StridedSlice(Op):
    """Python slicing with TensorFlow-style masks, and two rules of the spec:

    * Masks may have different lengths (a missing bit is 0), as the spec says; OpenVINO's
      implementation insists on equal lengths.
    * Slicing in reverse, a begin still below 0 after adding the dimension is clamped to 0
      (Python would give an empty slice). OpenVINO does the same.
    * An end_mask with a negative stride runs through element 0, as Python's omitted bound
      does and OpenVINO does; the spec's parenthetical "end = 0, not inclusive" contradicts its
      own statement that the mask equals an omitted bound, and the numpy behaviour is kept.
    """

    Attrs = StridedSliceAttrs
    inputs = ("data", "begin", "end", "stride")
    optional_inputs = 1

    def infer(self, data: TensorInfo, begin: TensorInfo, end: TensorInfo, stride: TensorInfo | None = None) -> TensorInfo:
        _check_params([begin, end, stride], 1)
        known = [begin, end] + ([stride] if stride is not None else [])
        if not data.shape.is_static or any(i.value is None for i in known):
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        index = planned(strided_index, data.shape.to_tuple(), begin.value, end.value,
                        None if stride is None else stride.value, self.attrs, port=self.port("begin"), at_runtime=False)
        shape = np.broadcast_to(np.empty((), np.uint8), data.shape.to_tuple())[index].shape
        return TensorInfo(data.etype, PartialShape.of(shape))

    def compute(self, data: np.ndarray, begin, end, stride=None) -> np.ndarray:
        return data[planned(strided_index, data.shape, begin, end, stride, self.attrs, port=self.port("begin"), at_runtime=True)]
