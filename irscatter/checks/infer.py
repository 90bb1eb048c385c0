"""The shape and type inference pass.

Every layer's op infers its outputs' element types and partial shapes from its inputs,
checking the spec's constraints as it goes. Small constant values travel with the shapes,
so that ops whose output shape depends on an input's value (an axis, a target shape) can be
resolved, and an op whose inputs are all known constants is folded when its output is
small. The declared port precisions and dims are compared with what was inferred; those
comparisons are findings, because OpenVINO itself treats port dims as informational.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from irscatter.errors import IRError, ValidationError
from irscatter.findings import Finding
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer
from irscatter.ir.shapes import MAX_RANK, PartialShape
from irscatter.ir.topology import Source
from irscatter.limits import FOLD_LIMIT, check_inferred, tensor_size_problem
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common import strict


def _as_tuple(value: object) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def infer_layer(op: Op, inputs: Sequence[TensorInfo]) -> tuple[TensorInfo, ...]:
    """Infer one layer's outputs, each within the tensor limits; fold the layer when every input
    is a known small constant."""
    outs = _as_tuple(op.infer(*inputs))
    for pos, info in enumerate(outs):
        dims = info.shape.dims
        if dims is None:
            continue
        if len(dims) > MAX_RANK:
            _check_rank(info.shape, f"output {pos}")
        # (`shape.is_static` and `to_tuple`, in one look at each dimension: every layer's outputs
        # pass here, at compiling and at each run's shape check)
        if all(d.max is not None and d.min == d.max for d in dims):
            static = tuple(d.min for d in dims)
            if tensor_size_problem(static, itemsize(info.etype)) is not None:
                check_inferred(static, itemsize(info.etype), f"output {pos}")
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


def _check_rank(shape: PartialShape, port: str) -> None:
    """No array has more than numpy's 64 dimensions, and numpy does not always say so: some of its
    kernels crash on more. Every layer's output passes here before anything of it is computed (a
    model's own inputs and constants are held to the same rank when read), so no kernel is handed
    an input, or asked for an output, of a rank numpy cannot hold."""
    dims = shape.dims
    if dims is not None and len(dims) > MAX_RANK:
        raise ValidationError(f"the output would have rank {len(dims)}, more than the {MAX_RANK} dimensions an "
                              f"array can have", port=port, label="rank-limit")


class InferenceMemo:
    """The outputs `infer_layer` gave for a signature, handed again to a layer of the same one.

    Real models repeat blocks, and inference is most of preparing them. The signature is what the
    op says its inference reads (`Op.inference_key`: its class and parsed attributes, one object
    per distinct set), the layer's output count and each input's element type and dimensions
    (interned, so compared by identity). What a signature does not hold is never shared: a layer
    with bodies, an input with a known value (inference may read it, and folding does), an
    inference that stored something on its op (Convert keeps its source type for its kernel),
    and an error (each layer raises its own). `share=False` infers every layer itself."""

    def __init__(self, share: bool = True) -> None:
        self.share = share
        self._known: dict[tuple, tuple[object, tuple[TensorInfo, ...]] | None] = {}

    def infer(self, op: Op, layer: Layer, inputs: Sequence[TensorInfo]) -> tuple[TensorInfo, ...]:
        key = _signature(op, layer, inputs) if self.share else None
        if key is None:
            return infer_layer(op, inputs)
        known = self._known.get(key, _UNSEEN)
        if known is None:  # inferring this signature stores state on the op: every layer infers
            return infer_layer(op, inputs)
        if known is not _UNSEEN:
            return known[1]
        before = dict(op.__dict__)
        outs = infer_layer(op, inputs)
        # What the key's identities point at stays alive with the entry, so no id is reused.
        self._known[key] = ((op.attrs, tuple(inputs)), outs) if _unchanged(before, op.__dict__) else None
        return outs


_UNSEEN: Any = object()


def _signature(op: Op, layer: Layer, inputs: Sequence[TensorInfo]) -> tuple | None:
    if layer.bodies:
        return None
    reads = op.inference_key()
    if reads is None:
        return None
    key: list = [reads, len(layer.outputs)]
    for info in inputs:
        if info.value is not None:
            return None
        dims = info.shape.dims
        key.append(info.etype)
        key.append(None if dims is None else tuple(map(id, dims)))
    return tuple(key)


def _unchanged(before: dict, after: dict) -> bool:
    return len(before) == len(after) and all(before.get(k, _UNSEEN) is v for k, v in after.items())


def infer_graph(
    order: Sequence[int],
    layers: Mapping[int, Layer],
    ops: Mapping[int, Op],
    sources: Mapping[int, Sequence[Source | None]],
    overrides: Mapping[int, TensorInfo] | None = None,
    file: str | None = None,
    previous: dict[int, tuple[tuple[TensorInfo, ...], tuple[TensorInfo, ...]]] | None = None,
) -> dict[Source, TensorInfo]:
    """Infer every output in `order`; `overrides` replaces a layer's (a Parameter's) output.
    `previous` holds what an earlier pass over the same graph gave each layer (its inputs and
    outputs): a layer whose inputs are the very objects it saw then gives the same outputs
    without inferring again, and the pass updates it. A decoder's next token changes one
    input's shape, and only the layers that shape reaches infer again.

    Strict mode is off in here: this pass runs again while a model runs (new input shapes, a
    body's outer shapes), and the run's own kernels report what the folding here would."""
    with strict.collecting(None):
        return _infer_in_order(order, layers, ops, sources, overrides, file, previous)


def _infer_in_order(order: Sequence[int], layers: Mapping[int, Layer], ops: Mapping[int, Op],
                    sources: Mapping[int, Sequence[Source | None]], overrides: Mapping[int, TensorInfo] | None,
                    file: str | None, previous: dict | None) -> dict[Source, TensorInfo]:
    infos: dict[Source, TensorInfo] = {}
    memo = InferenceMemo()  # a dynamic model's repeated blocks are inferred once per new input shape
    seen: Any = None
    for lid in order:
        layer = layers[lid]
        if previous is not None:
            seen = previous.get(lid)
        if overrides and lid in overrides:
            info = overrides[lid]
            if seen is not None and _same_info(seen[1][0], info):
                info = seen[1][0]  # (the same object, so that what reads it is not inferred again)
            elif previous is not None:
                previous[lid] = ((), (info,))
            infos[(lid, 0)] = info
            continue
        args = [infos[src] for src in sources[lid]]  # type: ignore[index]
        if seen is not None and len(seen[0]) == len(args) and all(map(operator.is_, seen[0], args)):
            outs = seen[1]
        else:
            try:
                outs = memo.infer(ops[lid], layer, args)
            except IRError as e:
                raise e.add_context(file=file, layer=layer.ref, line=layer.line) from None
            if seen is not None and len(outs) == len(seen[1]) and all(map(_same_info, outs, seen[1])):
                outs = seen[1]  # (unchanged: what reads them is not inferred again either)
            if previous is not None:
                previous[lid] = (tuple(args), outs)
        for pos, info in enumerate(outs):
            infos[(lid, pos)] = info
    return infos


def reinfer_changed(position: Mapping[int, int], layers: Mapping[int, Layer], ops: Mapping[int, Op],
                    sources: Mapping[int, Sequence[Source | None]], readers: Mapping[int, Sequence[int]],
                    overrides: Mapping[int, TensorInfo], previous: dict, file: str | None = None) -> None:
    """`infer_graph` again with new `overrides`, visiting only the layers a changed output reaches.
    `previous` holds a whole earlier pass over the graph (every layer of `position`, the layers'
    places in run order) and is updated as `infer_graph` updates it; `readers` gives the layers
    that read each layer's outputs. A layer whose new outputs say what its old ones said stops
    the change there, so a decoder's next token (one input a step longer) infers the few layers
    its mask feeds instead of thousands. On an error `previous` is emptied: the next pass is a
    whole one, since the layers after the failing one were never brought up to date."""
    try:
        with strict.collecting(None):
            _reinfer_changed(position, layers, ops, sources, readers, overrides, previous, file)
    except BaseException:
        previous.clear()
        raise


def _reinfer_changed(position: Mapping[int, int], layers: Mapping[int, Layer], ops: Mapping[int, Op],
                     sources: Mapping[int, Sequence[Source | None]], readers: Mapping[int, Sequence[int]],
                     overrides: Mapping[int, TensorInfo], previous: dict, file: str | None) -> None:
    waiting: list[tuple[int, int]] = []  # (place in run order, layer id): a heap
    queued: set[int] = set()

    def changed(lid: int, entry: tuple) -> None:
        previous[lid] = entry
        for reader in readers.get(lid, ()):
            if reader not in queued:
                queued.add(reader)
                heapq.heappush(waiting, (position[reader], reader))

    for lid, info in overrides.items():
        if lid in position and not _same_info(previous[lid][1][0], info):
            changed(lid, ((), (info,)))
    memo = InferenceMemo()
    while waiting:
        _, lid = heapq.heappop(waiting)
        layer = layers[lid]
        args = [previous[src[0]][1][src[1]] for src in sources[lid]]  # type: ignore[index]
        try:
            outs = memo.infer(ops[lid], layer, args)
        except IRError as e:
            raise e.add_context(file=file, layer=layer.ref, line=layer.line) from None
        seen = previous[lid]
        if len(outs) == len(seen[1]) and all(map(_same_info, outs, seen[1])):
            previous[lid] = (tuple(args), seen[1])
        else:
            changed(lid, (tuple(args), outs))


def _same_info(a: TensorInfo, b: TensorInfo) -> bool:
    """Whether two inferred outputs say the same: type, dims and (folded) value."""
    if a.etype is not b.etype or a.shape.dims != b.shape.dims:
        return False
    if a.value is None or b.value is None:
        return a.value is b.value
    return a.value.dtype == b.value.dtype and a.value.shape == b.value.shape and a.value.tobytes() == b.value.tobytes()


def itemsize(etype: ElementType) -> int:
    """Bytes per element in memory (strings and dynamic types: a pointer's worth at least)."""
    known = _ITEMSIZES.get(etype)
    if known is None:
        dtype = None if etype in (ElementType.dynamic, ElementType.string) else etype.dtype
        known = _ITEMSIZES[etype] = dtype.itemsize if dtype is not None else 8
    return known


_ITEMSIZES: dict[ElementType, int] = {}


def compare_declared(layer: Layer, position: int, info: TensorInfo) -> list[Finding]:
    """Findings where an output port's declared precision or dims contradict inference."""
    if position >= len(layer.outputs):
        return []
    port = layer.outputs[position]
    if port.precision is info.etype and (port.shape is info.shape or port.shape.dims == info.shape.dims):
        return []  # (equal dims are mostly the same interned objects: the tuples compare by identity)
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
