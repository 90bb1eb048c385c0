"""Slice-8, and the slice planning it shares with SliceScatter-15 and StridedSlice-1: slicing
with Python's rules, a view for reading and a copy for writing.

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
from irscatter.ops.base import Op, TensorInfo, check, fail
from irscatter.ops.registry import register

# (name, label of its type check, label of its rank check), in input order
_PARAMS = (("start", "start-type", "start-rank"), ("stop", "stop-type", "stop-rank"),
           ("step", "step-type", "step-rank"), ("axes", "axes-type", "axes-rank"))


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
        fail(e.label, str(e), port=port)


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


def check_slice_params(infos: list[TensorInfo | None], first_port: int) -> None:
    lengths = []
    for offset, ((name, type_label, rank_label), info) in enumerate(zip(_PARAMS, infos)):
        if info is None:
            continue
        port = f"input {first_port + offset}"
        check(info.etype is ElementType.dynamic or info.etype.is_integral, type_label,
              f"{name} must be of an integer type, found {info.etype}", port=port)
        if info.shape.rank_is_static:
            check(info.shape.rank == 1, rank_label, f"{name} must be a 1-D tensor, found shape {info.shape}", port=port)
            lengths.append(info.shape[0])
    for d in lengths[1:]:
        check(d.compatible(lengths[0]), "sizes",
              f"start, stop, step{' and axes' if len(lengths) == 4 else ''} must have the same number of elements")


def _known(infos: list[TensorInfo | None]) -> bool:
    return all(i is None or i.value is not None for i in infos)


def planned_shape(data: TensorInfo, params: list[TensorInfo | None], port: str) -> PartialShape:
    """The sliced region's shape as far as it is known."""
    if not data.shape.rank_is_static:
        return PartialShape.dynamic_rank()
    if data.shape.is_static and _known(params):
        values = (p.value if p is not None else None for p in params)
        return PartialShape.of(planned(plan_slices, data.shape.to_tuple(), *values, port=port, at_runtime=False).shape)
    dims = list(data.shape.ranked_dims)
    axes = params[3]
    if axes is not None and axes.value is not None:
        for a in np.asarray(axes.value).reshape(-1):
            dims[int(a) % len(dims)] = Dimension.dynamic()
        return PartialShape.of(dims)
    start = params[0]  # start is never optional: only axes (and Slice-8's step) may be absent
    assert start is not None
    n = start.shape[0] if start.shape.rank_is_static and start.shape.rank == 1 else None
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
        check_slice_params(params, 1)
        return TensorInfo(data.etype, planned_shape(data, params, self.port("start")))

    def compute(self, data, start, stop, step, axes=None) -> np.ndarray:
        params = (start, stop, step) if axes is None else (start, stop, step, axes)
        plan = self.per_constant(data.shape, params, lambda: planned(plan_slices, data.shape, start, stop, step, axes,
                                                                     port=self.port("start"), at_runtime=True))
        return data[plan.index]
