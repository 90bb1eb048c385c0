"""The shape and type inference pass.

Every layer's op infers its outputs' element types and partial shapes from its inputs,
checking the spec's constraints as it goes. Small constant values travel with the shapes,
so that ops whose output shape depends on an input's value (an axis, a target shape) can be
resolved, and an op whose inputs are all known constants is folded when its output is
small. The declared port precisions and dims are compared with what was inferred; those
comparisons are findings, because OpenVINO itself treats port dims as informational.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from irscatter.errors import IRError
from irscatter.findings import Finding
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer
from irscatter.ir.shapes import PartialShape
from irscatter.ir.topology import Source
from irscatter.limits import FOLD_LIMIT, check_inferred
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common import strict


def _as_tuple(value: object) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def infer_layer(op: Op, inputs: Sequence[TensorInfo]) -> tuple[TensorInfo, ...]:
    """Infer one layer's outputs, each within the tensor limits; fold the layer when every input
    is a known small constant."""
    outs = _as_tuple(op.infer(*inputs))
    for pos, info in enumerate(outs):
        if info.shape.is_static:
            check_inferred(info.shape.to_tuple(), itemsize(info.etype), f"output {pos}")
    if (
        op.foldable
        and inputs
        and len(outs) == 1
        and all(i.value is not None for i in inputs)
        and outs[0].shape.is_static
        and math.prod(outs[0].shape.to_tuple()) <= FOLD_LIMIT
    ):
        value = np.asarray(op.compute(*(i.value for i in inputs)))
        outs = (TensorInfo(outs[0].etype, PartialShape.of(value.shape), value),)
    return outs


def infer_graph(
    order: Sequence[int],
    layers: Mapping[int, Layer],
    ops: Mapping[int, Op],
    sources: Mapping[int, Sequence[Source | None]],
    overrides: Mapping[int, TensorInfo] | None = None,
    file: str | None = None,
) -> dict[Source, TensorInfo]:
    """Infer every output in `order`; `overrides` replaces a layer's (a Parameter's) output.

    Strict mode is off in here: this pass runs again while a model runs (new input shapes, a
    body's outer shapes), and the run's own kernels report what the folding here would."""
    with strict.collecting(None):
        return _infer_in_order(order, layers, ops, sources, overrides, file)


def _infer_in_order(order: Sequence[int], layers: Mapping[int, Layer], ops: Mapping[int, Op],
                    sources: Mapping[int, Sequence[Source | None]], overrides: Mapping[int, TensorInfo] | None,
                    file: str | None) -> dict[Source, TensorInfo]:
    infos: dict[Source, TensorInfo] = {}
    for lid in order:
        layer = layers[lid]
        if overrides and lid in overrides:
            infos[(lid, 0)] = overrides[lid]
            continue
        args = [infos[src] for src in sources[lid]]  # type: ignore[index]
        try:
            outs = infer_layer(ops[lid], args)
        except IRError as e:
            raise e.add_context(file=file, layer=layer.ref, line=layer.line) from None
        for pos, info in enumerate(outs):
            infos[(lid, pos)] = info
    return infos


def itemsize(etype: ElementType) -> int:
    """Bytes per element in memory (strings and dynamic types: a pointer's worth at least)."""
    dtype = None if etype in (ElementType.dynamic, ElementType.string) else etype.dtype
    return dtype.itemsize if dtype is not None else 8


def compare_declared(layer: Layer, position: int, info: TensorInfo) -> list[Finding]:
    """Findings where an output port's declared precision or dims contradict inference."""
    if position >= len(layer.outputs):
        return []
    port = layer.outputs[position]
    if port.precision is info.etype and port.shape is info.shape:  # shapes are interned: the common case
        return []
    found: list[Finding] = []
    where = f"output {position} (port {port.id})"
    if port.precision not in (None, ElementType.dynamic) and info.etype is not ElementType.dynamic:
        if port.precision is not info.etype:
            found.append(Finding("error", "declared-precision",
                                 f"declared precision {port.precision.precision} but the op produces {info.etype}",
                                 layer.ref, port=where, line=layer.line))
    declared = port.shape
    if info.shape.dims is not None and not (declared.dims == () and not info.shape.is_static):
        # A port without <dim>s is a scalar or a dynamic rank: only contradict a known rank.
        if not declared.compatible(info.shape):
            found.append(Finding("error", "declared-shape",
                                 f"declared dims {declared} but the op produces {info.shape}",
                                 layer.ref, port=where, line=layer.line))
    return found
