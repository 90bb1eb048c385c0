"""Broadcast-1 and Broadcast-3: `data` broadcast to `target_shape` by numpy rules, explicitly
through `axes_mapping`, or (in -3) bidirectionally.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import BeforeValidator

from irscatter.errors import ExecutionError
from irscatter.ir.shapes import PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common.axes import check_1d_integral, int_values
from irscatter.ops.common.many_axes import broadcast_shape
from irscatter.ops.registry import register


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
        return broadcast_shape(data_shape, target)
    if mode == "explicit":
        if axes is None or len(axes) != len(data_shape):
            raise ValueError(f"axes_mapping must list one target axis per data dimension ({len(data_shape)})")
        if sorted(axes) != list(axes) or any(a >= len(target) for a in axes):
            raise ValueError(f"axes_mapping {axes} must be increasing axes of the target {target}")
        for d, a in zip(data_shape, axes):
            if d != 1 and d != target[a]:
                raise ValueError(f"data dimension {d} cannot broadcast to target dimension {target[a]} (axis {a})")
        return tuple(target)
    if len(target) < len(data_shape) or broadcast_shape(data_shape, target) != tuple(target):
        raise ValueError(f"data shape {list(data_shape)} cannot broadcast to {target}")
    return tuple(target)


@register("Broadcast", 1)
class Broadcast1(Op):
    labels = {
        "target_shape-type": "target_shape is not of an integer type",
        "target_shape-rank": "target_shape is not a scalar or 1-D",
        "broadcast-mode": "mode pdpd, which irscatter does not implement",
        "axes-mapping": "mode explicit without the axes_mapping input",
        "axes_mapping-type": "axes_mapping is not of an integer type",
        "axes_mapping-rank": "axes_mapping is not a scalar or 1-D",
        "broadcast-shape": "data does not broadcast to target_shape in the given mode",
    }

    # Broadcast-3 adds a mode to the schema, and this class's code handles every mode of both.
    Attrs: ClassVar[type[Broadcast1Attrs | Broadcast3Attrs]] = Broadcast1Attrs
    attrs: Broadcast1Attrs | Broadcast3Attrs
    inputs = ("data", "target_shape", "axes_mapping")
    optional_inputs = 1

    def infer(self, data: TensorInfo, target: TensorInfo, axes: TensorInfo | None = None) -> TensorInfo:
        check(self.attrs.mode != "pdpd", "broadcast-mode", "Broadcast mode pdpd is not supported by irscatter")
        check_1d_integral(target, "target_shape", self.port("target_shape"),
                          type_label="target_shape-type", rank_label="target_shape-rank")
        check(self.attrs.mode != "explicit" or axes is not None, "axes-mapping",
              "mode explicit needs the axes_mapping input")
        if axes is not None:
            check_1d_integral(axes, "axes_mapping", self.port("axes_mapping"),
                              type_label="axes_mapping-type", rank_label="axes_mapping-rank")
        shape = int_values(target.value)
        if shape is None:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        check(all(d >= 0 for d in shape), "broadcast-shape", f"target_shape {shape} has a negative dimension",
              port=self.port("target_shape"))
        if data.shape.is_static and (axes is None or axes.value is not None):
            try:
                out = broadcast_target(data.shape.to_tuple(), shape, self.attrs.mode, int_values(axes.value) if axes else None)
            except ValueError as e:
                fail("broadcast-shape", str(e), port=self.port("target_shape"))
            return TensorInfo(data.etype, PartialShape.of(out))
        if self.attrs.mode == "bidirectional":
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        return TensorInfo(data.etype, PartialShape.of(shape))

    def compute(self, data: np.ndarray, target: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
        mapping = int_values(axes) if axes is not None else None
        wanted = int_values(target)
        key = (data.shape, tuple(wanted), None if mapping is None else tuple(mapping))
        out_shape, view = self.per_shape(key, lambda: self._geometry(data.shape, wanted, mapping))
        check_allocation(out_shape, data.dtype.itemsize)  # later layers will materialize it
        return np.broadcast_to(data if view is None else data.reshape(view), out_shape)

    def _geometry(self, data_shape: tuple[int, ...], wanted: list[int],
                  mapping: list[int] | None) -> tuple[tuple[int, ...], list[int] | None]:
        """The output shape, and in explicit mode the shape the data takes first (its dims
        placed at the mapped axes, 1 elsewhere); worked out once per shapes and values."""
        if any(d < 0 for d in wanted):
            raise ExecutionError(f"target_shape {wanted} has a negative dimension",
                                 port=self.port("target_shape"), label="broadcast-shape")
        try:
            out_shape = broadcast_target(data_shape, wanted, self.attrs.mode, mapping)
        except ValueError as e:
            raise ExecutionError(str(e), port=self.port("target_shape"), label="broadcast-shape") from None
        if self.attrs.mode != "explicit":
            return out_shape, None
        assert mapping is not None  # broadcast_target refuses explicit mode without one
        view = [1] * len(out_shape)
        for d, a in zip(data_shape, mapping):
            view[a] = d
        return out_shape, view


@register("Broadcast", 3)
class Broadcast3(Broadcast1):
    Attrs = Broadcast3Attrs
    attrs: Broadcast3Attrs
