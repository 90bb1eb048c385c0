"""Ops that move or reinterpret data without arithmetic: ShapeOf-1/3, Reshape-1, Squeeze-1,
Unsqueeze-1, Concat-1, Transpose-1, Broadcast-1/3, Range-4.

These are the glue around scatters in real IRs (cache shapes, index arithmetic). Their
inference computes values whenever the inputs are known, so ShapeOf chains of a static
model fold into constants and the shape-determining inputs of later ops become known.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import BeforeValidator

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import ElementTypeAttr, IRBool, Lower, Op, OpAttrs, TensorInfo, check, check_integral, normalized_axis
from irscatter.ops.registry import register


def _ints(value: np.ndarray | None) -> list[int] | None:
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def _check_1d(info: TensorInfo, name: str, port: str) -> None:
    check_integral(info, name, port)
    if info.shape.rank_is_static:
        check(info.shape.rank <= 1, f"{name}-rank", f"{name} must be a scalar or a 1-D tensor, found {info.shape}", port=port)



# --- ShapeOf -------------------------------------------------------------------------------------


class ShapeOf3Attrs(OpAttrs):
    output_type: Annotated[Literal["i32", "i64"], Lower] = "i64"


@register("ShapeOf", 1)
class ShapeOf1(Op):
    inputs = ("data",)
    shape_only = True

    @property
    def out_type(self) -> ElementType:  # ShapeOf-1 has no attributes: always i64
        return ElementType.i64

    def infer(self, data: TensorInfo) -> TensorInfo:
        if not data.shape.rank_is_static:
            return TensorInfo(self.out_type, PartialShape.of([-1]))
        value = np.array(data.shape.to_tuple(), self.out_type.dtype) if data.shape.is_static else None
        return TensorInfo(self.out_type, PartialShape.of([data.shape.rank]), value)

    def compute(self, data: np.ndarray) -> np.ndarray:
        return np.array(data.shape, self.out_type.dtype)


@register("ShapeOf", 3)
class ShapeOf3(ShapeOf1):
    Attrs = ShapeOf3Attrs

    @property
    def out_type(self) -> ElementType:
        return ElementType(self.attrs.output_type)


# --- Reshape, Squeeze, Unsqueeze -------------------------------------------------------------------


class ReshapeAttrs(OpAttrs):
    special_zero: IRBool


def reshape_target(in_shape: tuple[int, ...], pattern: list[int], special_zero: bool) -> tuple[int, ...]:
    """Resolve a Reshape pattern: 0 copies the input dimension (with special_zero), -1 is inferred."""
    out = []
    for i, d in enumerate(pattern):
        if d == 0 and special_zero:
            if i >= len(in_shape):
                raise ValueError(f"pattern position {i} copies an input dimension that does not exist")
            out.append(in_shape[i])
        elif d < -1:
            raise ValueError(f"pattern value {d} is below -1")
        else:
            out.append(d)
    if out.count(-1) > 1:
        raise ValueError("at most one pattern value may be -1")
    total = math.prod(in_shape)
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        if known == 0 or total % known:
            raise ValueError(f"cannot infer the -1 dimension: {total} elements do not divide by {known}")
        out[out.index(-1)] = total // known
    if math.prod(out) != total:
        raise ValueError(f"{list(in_shape)} ({total} elements) cannot be reshaped to {out} ({math.prod(out)} elements)")
    return tuple(out)


@register("Reshape", 1)
class Reshape(Op):
    Attrs = ReshapeAttrs
    inputs = ("data", "shape")

    def infer(self, data: TensorInfo, shape: TensorInfo) -> TensorInfo:
        _check_1d(shape, "shape", self.port("shape"))
        pattern = _ints(shape.value)
        if pattern is None:
            n = shape.shape[0] if shape.shape.rank_is_static and shape.shape.rank == 1 else None
            dims = [-1] * n.min if n is not None and n.is_static else None
            return TensorInfo(data.etype, PartialShape.of(dims))
        if data.shape.is_static:
            try:
                return TensorInfo(data.etype, PartialShape.of(reshape_target(data.shape.to_tuple(), pattern,
                                                                             self.attrs.special_zero)))
            except ValueError as e:
                check(False, "reshape-pattern", str(e), port=self.port("shape"))
        dims = [data.shape[i] if (d == 0 and self.attrs.special_zero and data.shape.rank_is_static
                                  and i < data.shape.rank) else (Dimension.dynamic() if d == -1 else Dimension.static(d))
                for i, d in enumerate(pattern)]
        return TensorInfo(data.etype, PartialShape.of(dims))

    def compute(self, data: np.ndarray, shape: np.ndarray) -> np.ndarray:
        try:
            return data.reshape(reshape_target(data.shape, _ints(shape), self.attrs.special_zero))
        except ValueError as e:
            raise ExecutionError(str(e), port=self.port("shape"), label="reshape-pattern") from None


def _normalize_axes(axes: list[int], rank: int, port: str) -> list[int]:
    out = [normalized_axis(a, rank, port=port) for a in axes]
    check(len(set(out)) == len(out), "axes-unique", f"axes {axes} repeat an axis", port=port)
    return out


@register("Squeeze", 1)
class Squeeze(Op):
    inputs = ("data", "axes")
    optional_inputs = 1

    def _squeezed(self, shape: tuple, axes: list[int] | None):
        if axes is None:
            return tuple(d for d in shape if d != 1)
        if not shape:  # a scalar has nothing to squeeze; OpenVINO accepts axis 0 (or -1) and keeps it
            check(all(a in (0, -1) for a in axes), "axis-range", f"axes {axes} do not exist in a scalar",
                  port=self.port("axes"))
            return ()
        axes = _normalize_axes(axes, len(shape), self.port("axes"))
        for a in axes:
            check(shape[a] == 1, "squeeze-one", f"axis {a} has size {shape[a]}; only axes of size 1 can be squeezed",
                  port=self.port("axes"))
        return tuple(d for i, d in enumerate(shape) if i not in axes)

    def infer(self, data: TensorInfo, axes: TensorInfo | None = None) -> TensorInfo:
        if axes is not None:
            _check_1d(axes, "axes", self.port("axes"))
        if not data.shape.is_static or (axes is not None and axes.value is None):
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        out = self._squeezed(data.shape.to_tuple(), None if axes is None else _ints(axes.value))
        return TensorInfo(data.etype, PartialShape.of(out))

    def compute(self, data: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
        return data.reshape(self._squeezed(data.shape, None if axes is None else _ints(axes)))


@register("Squeeze", 15)
class Squeeze15(Squeeze):
    """Squeeze-15: an axis whose dimension is not 1 is left in place rather than refused.

    `allow_axis_skip` only changes shape inference over dynamic dimensions (an axis that might
    be 1 then makes the rank dynamic); irscatter already answers a dynamic rank whenever the
    data shape is not static, which both settings allow.
    """

    class Attrs(OpAttrs):
        allow_axis_skip: IRBool = False

    def _squeezed(self, shape: tuple, axes: list[int] | None):
        if axes is None or not shape:
            return super()._squeezed(shape, axes)
        axes = _normalize_axes(axes, len(shape), self.port("axes"))
        return tuple(d for i, d in enumerate(shape) if not (i in axes and d == 1))


@register("Unsqueeze", 1)
class Unsqueeze(Op):
    inputs = ("data", "axes")

    def _unsqueezed(self, dims: list, axes: list[int], one):
        rank = len(dims) + len(axes)
        out_axes = sorted(_normalize_axes(axes, rank, self.port("axes")))
        out = list(dims)
        for a in out_axes:
            out.insert(a, one)
        return out

    def infer(self, data: TensorInfo, axes: TensorInfo) -> TensorInfo:
        _check_1d(axes, "axes", self.port("axes"))
        if not data.shape.rank_is_static or axes.value is None:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        return TensorInfo(data.etype, PartialShape.of(self._unsqueezed(list(data.shape.dims), _ints(axes.value),
                                                                       Dimension.static(1))))

    def compute(self, data: np.ndarray, axes: np.ndarray) -> np.ndarray:
        return data.reshape(self._unsqueezed(list(data.shape), _ints(axes), 1))


# --- Concat, Transpose -----------------------------------------------------------------------------


class ConcatAttrs(OpAttrs):
    axis: int


@register("Concat", 1)
class Concat(Op):
    Attrs = ConcatAttrs
    inputs = ("inputs",)
    variadic = True

    def infer(self, *parts: TensorInfo) -> TensorInfo:
        etypes = {p.etype for p in parts} - {ElementType.dynamic}
        check(len(etypes) <= 1, "same-element-type", f"inputs must share one element type, found {sorted(map(str, etypes))}")
        etype = etypes.pop() if etypes else ElementType.dynamic
        ranked = [p.shape for p in parts if p.shape.rank_is_static]
        if not ranked:
            return TensorInfo(etype, PartialShape.dynamic_rank())
        rank = ranked[0].rank
        check(rank >= 1, "concat-rank", "inputs must have rank at least 1")
        a = normalized_axis(self.attrs.axis, rank, port=self.port("axis"))
        for i, s in enumerate(ranked):
            check(s.rank == rank, "concat-rank", f"every input must have rank {rank}, input {i} has {s}", port=f"input {i}")
            for d in range(rank):
                if d != a:
                    check(s[d].compatible(ranked[0][d]), "concat-shape",
                          f"dimension {d} must match across inputs ({s[d]} vs {ranked[0][d]})", port=f"input {i}")
        dims = list(ranked[0].dims)
        along = [s[a] for s in ranked]
        dims[a] = (Dimension.static(sum(d.min for d in along)) if len(ranked) == len(parts) and all(d.is_static for d in along)
                   else Dimension.dynamic())
        return TensorInfo(etype, PartialShape.of(dims))

    def compute(self, *parts: np.ndarray) -> np.ndarray:
        a = normalized_axis(self.attrs.axis, parts[0].ndim, port=self.port("axis"), at_runtime=True)
        try:
            return np.concatenate(parts, axis=a)
        except ValueError as e:
            raise ExecutionError(f"inputs do not concatenate: {e}", label="concat-shape") from None


@register("Transpose", 1)
class Transpose(Op):
    inputs = ("data", "order")

    def _order(self, rank: int, order: list[int]) -> list[int]:
        if not order:
            return list(range(rank - 1, -1, -1))
        order = [o + rank if o < 0 else o for o in order]
        check(sorted(order) == list(range(rank)), "order-permutation",
              f"order {order} must be a permutation of 0..{rank - 1}", port=self.port("order"))
        return order

    def infer(self, data: TensorInfo, order: TensorInfo) -> TensorInfo:
        _check_1d(order, "order", self.port("order"))
        if not data.shape.rank_is_static or order.value is None:
            return TensorInfo(data.etype, PartialShape.of([-1] * data.shape.rank) if data.shape.rank_is_static
                              else PartialShape.dynamic_rank())
        perm = self._order(data.shape.rank, _ints(order.value))
        return TensorInfo(data.etype, PartialShape.of([data.shape[i] for i in perm]))

    def compute(self, data: np.ndarray, order: np.ndarray) -> np.ndarray:
        return np.transpose(data, self._order(data.ndim, _ints(order)))


# --- Broadcast --------------------------------------------------------------------------------------


def _broadcast_mode(value: object) -> object:
    """OpenVINO's enums name explicit broadcasting twice, `none` and `explicit`, and its serializer
    writes the first name its table lists: Broadcast-1 in explicit mode is saved as `mode="none"`."""
    if isinstance(value, str):
        value = value.strip().lower()
        return "explicit" if value == "none" else value
    return value


BroadcastMode = BeforeValidator(_broadcast_mode)


class Broadcast1Attrs(OpAttrs):
    mode: Annotated[Literal["numpy", "explicit", "pdpd"], BroadcastMode] = "numpy"


class Broadcast3Attrs(OpAttrs):
    mode: Annotated[Literal["numpy", "explicit", "bidirectional", "pdpd"], BroadcastMode] = "numpy"


def broadcast_target(data_shape: tuple[int, ...], target: list[int], mode: str, axes: list[int] | None) -> tuple[int, ...]:
    if any(t < 0 for t in target):
        raise ValueError(f"target_shape {target} has a negative dimension")
    if axes is not None and any(a < 0 for a in axes):
        raise ValueError(f"axes_mapping {axes} has a negative axis")
    if mode == "bidirectional":
        return tuple(np.broadcast_shapes(data_shape, tuple(target)))
    if mode == "explicit":
        if axes is None or len(axes) != len(data_shape):
            raise ValueError(f"axes_mapping must list one target axis per data dimension ({len(data_shape)})")
        if sorted(axes) != list(axes) or any(a >= len(target) for a in axes):
            raise ValueError(f"axes_mapping {axes} must be increasing axes of the target {target}")
        for d, a in zip(data_shape, axes):
            if d != 1 and d != target[a]:
                raise ValueError(f"data dimension {d} cannot broadcast to target dimension {target[a]} (axis {a})")
        return tuple(target)
    if len(target) < len(data_shape) or tuple(np.broadcast_shapes(data_shape, tuple(target))) != tuple(target):
        raise ValueError(f"data shape {list(data_shape)} cannot broadcast to {target}")
    return tuple(target)


@register("Broadcast", 1)
class Broadcast1(Op):
    Attrs = Broadcast1Attrs
    inputs = ("data", "target_shape", "axes_mapping")
    optional_inputs = 1

    def infer(self, data: TensorInfo, target: TensorInfo, axes: TensorInfo | None = None) -> TensorInfo:
        check(self.attrs.mode != "pdpd", "broadcast-mode", "Broadcast mode pdpd is not supported by irscatter")
        _check_1d(target, "target_shape", self.port("target_shape"))
        check(self.attrs.mode != "explicit" or axes is not None, "axes-mapping",
              "mode explicit needs the axes_mapping input")
        shape = _ints(target.value)
        if shape is None:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        if data.shape.is_static and (axes is None or axes.value is not None):
            try:
                out = broadcast_target(data.shape.to_tuple(), shape, self.attrs.mode, _ints(axes.value) if axes else None)
            except ValueError as e:
                check(False, "broadcast-shape", str(e), port=self.port("target_shape"))
            return TensorInfo(data.etype, PartialShape.of(out))
        if self.attrs.mode == "bidirectional":
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        check(all(d >= 0 for d in shape), "broadcast-shape", f"target_shape {shape} has a negative dimension",
              port=self.port("target_shape"))
        return TensorInfo(data.etype, PartialShape.of(shape))

    def compute(self, data: np.ndarray, target: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
        mapping = _ints(axes) if axes is not None else None
        try:
            out_shape = broadcast_target(data.shape, _ints(target), self.attrs.mode, mapping)
        except ValueError as e:
            raise ExecutionError(str(e), port=self.port("target_shape"), label="broadcast-shape") from None
        check_allocation(out_shape, data.dtype.itemsize)  # later layers will materialize it
        if self.attrs.mode == "explicit":
            view = [1] * len(out_shape)
            for d, a in zip(data.shape, mapping):
                view[a] = d
            data = data.reshape(view)
        return np.broadcast_to(data, out_shape)


@register("Broadcast", 3)
class Broadcast3(Broadcast1):
    Attrs = Broadcast3Attrs


# --- Range ------------------------------------------------------------------------------------------


class RangeAttrs(OpAttrs):
    output_type: ElementTypeAttr


def range_values(start: float, stop: float, step: float, etype: ElementType) -> np.ndarray:
    """Range-4: for integer outputs the bounds are first truncated to integers."""
    count = range_length(start, stop, step, etype)
    if etype.is_integral:
        start, step = int(start), int(step)
    check_allocation([count], etype.dtype.itemsize)
    return (start + step * np.arange(count, dtype=np.float64 if etype.is_float else np.int64)).astype(etype.dtype)


def range_length(start: float, stop: float, step: float, etype: ElementType) -> int:
    """How many values Range-4 yields: for integer outputs the bounds are first truncated."""
    if not all(math.isfinite(v) for v in (start, stop, step)):
        raise ValueError(f"start, stop and step must be finite, found {start}, {stop}, {step}")
    if step == 0:
        raise ValueError("step must be non-zero")
    if etype.is_integral:
        start, stop, step = int(start), int(stop), int(step)
        if step == 0:
            raise ValueError("step truncates to zero for an integer output type")
    return max(math.ceil((stop - start) / step), 0)


@register("Range", 4)
class Range(Op):
    Attrs = RangeAttrs
    inputs = ("start", "stop", "step")

    def infer(self, start: TensorInfo, stop: TensorInfo, step: TensorInfo) -> TensorInfo:
        for i, (name, info) in enumerate((("start", start), ("stop", stop), ("step", step))):
            if info.shape.rank_is_static:
                check(info.shape.rank == 0 or (info.shape.rank == 1 and info.shape[0].contains(1)), f"{name}-shape",
                      f"{name} must be a scalar, found shape {info.shape}", port=f"input {i}")
        etype = self.attrs.output_type
        check(etype.is_float or etype.is_integral, "output-type", f"output_type must be numeric, found {etype}")
        if all(i.value is not None for i in (start, stop, step)):
            bounds = [float(np.asarray(i.value).reshape(-1)[0]) for i in (start, stop, step)]
            try:
                count = range_length(*bounds, etype)
            except ValueError as e:
                check(False, "range-step", str(e), port=self.port("step"))
            return TensorInfo(etype, PartialShape.of([count]))
        return TensorInfo(etype, PartialShape.of([-1]))

    def compute(self, start: np.ndarray, stop: np.ndarray, step: np.ndarray) -> np.ndarray:
        try:
            return range_values(*(float(np.asarray(v).reshape(-1)[0]) for v in (start, stop, step)), self.attrs.output_type)
        except ValueError as e:
            raise ExecutionError(str(e), port=self.port("step"), label="range-step") from None
