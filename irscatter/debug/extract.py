"""Cutting a model down: the part of the graph that computes some tensors from others, as a
standalone IR, with the values that go in and come out.

A cut is named by tensors: `outputs` are what the new model returns, `inputs` the tensors it
is fed instead of computing them (they become Parameters with the types and shapes irscatter
infers). Everything between is copied as written; the original model's Parameters and Consts
that the outputs need come along as they are. The Assign of a ReadValue in the cut comes along
when the cut computes what it writes (a whole model keeps its state); otherwise the ReadValue
is fed, as the value it read: OpenVINO's CPU plugin runs no ReadValue without its Assign.
Tensors are named as `run(outputs=...)` names them: an output name, a tensor name, or
`"<layer name>:<port id>"`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import numpy as np

from irscatter.errors import Argument, UsageError
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Model, output_name
from irscatter.ir.loader import read_model
from irscatter.ir.writer import IRWriter, Tensor
from irscatter.runtime.graph_view import BOUNDARY
from irscatter.runtime.inputs import save_npz
from irscatter.runtime.interpreter import CompiledModel

Source = tuple[int, int]
_SAFE = re.compile(r"[^A-Za-z0-9_.\-]")


@dataclass(frozen=True)
class Cut:
    """What a cut model computes: its outputs from its inputs, through `layers` (ids, in the
    order they run)."""

    outputs: tuple[Source, ...]
    inputs: tuple[Source, ...]
    layers: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.layers)


def tensor_key(compiled: CompiledModel, src: Source) -> str:
    return compiled.graph.tensor_key(src)


def port_names(compiled: CompiledModel) -> Iterator[tuple[str, Source, bool]]:
    """Each name of each output port, in topological order: its "<layer name>:<port id>"
    (with True: an address), then its tensor names (False)."""
    graph = compiled.graph
    for src in graph.tensors():
        yield graph.tensor_key(src), src, True
        for name in graph.layers[src[0]].outputs[src[1]].names:
            yield name, src, False


def tensor_index(compiled: CompiledModel) -> dict[str, Source]:
    """Every name a tensor answers to: "<layer name>:<port id>", its tensor names, and the
    model's output names."""
    index: dict[str, Source] = {}
    for name, src, _ in port_names(compiled):
        index.setdefault(name, src)
    for spec in compiled.outputs:
        index.setdefault(spec.name, compiled.graph.returned(spec.layer.id))
    return index


def resolve(compiled: CompiledModel, names: Iterable[str], what: str) -> tuple[Source, ...]:
    index = tensor_index(compiled)
    found = []
    for name in names:
        if name not in index:
            raise UsageError(f'{what}: the model has no tensor named "{name}" (give an output name, a tensor name '
                             f'or "<layer name>:<port id>")')
        found.append(index[name])
    return tuple(dict.fromkeys(found))


def plan(compiled: CompiledModel, outputs: Sequence[Source], inputs: Sequence[Source] = (), *,
         require_used: bool = True) -> Cut:
    """The layers that compute `outputs` when `inputs` are given; an input the outputs do not
    depend on is an error, or with `require_used=False` left out."""
    if not outputs:
        raise UsageError("a cut needs at least one output tensor")
    given = set(inputs)
    needed: set[int] = set()
    used_inputs: set[Source] = set()
    stack = [src for src in outputs if src not in given]
    used_inputs.update(src for src in outputs if src in given)
    while stack:
        lid = stack.pop()[0]
        if lid in needed:
            continue
        needed.add(lid)
        for src in compiled.graph.inputs_of(lid):
            if src in given:
                used_inputs.add(src)
            elif src[0] not in needed:
                stack.append(src)
    unused = [tensor_key(compiled, s) for s in inputs if s not in used_inputs]
    if unused and require_used:
        raise UsageError(f"the outputs do not depend on {', '.join(unused)}, which the cut was to be fed")
    needed |= _closing_assigns(compiled, needed, given)
    order = tuple(lid for lid in compiled.graph.order if lid in needed)
    lone = _lone_reads(compiled, order)
    if lone:  # each fed instead, as the value it read in this run
        return plan(compiled, outputs, [*inputs, *lone], require_used=require_used)
    return Cut(tuple(dict.fromkeys(outputs)), tuple(s for s in inputs if s in used_inputs), order)


def _closing_assigns(compiled: CompiledModel, needed: set[int], given: set[Source]) -> set[int]:
    """The Assigns (sinks: no output needs them) of the variables whose ReadValue is in the cut,
    when the cut already computes what they write: a whole model's cut keeps its state."""
    graph = compiled.graph
    read = {graph.layers[lid].attrs.get("variable_id") for lid in needed if graph.type_of(lid) == "ReadValue"}
    return {lid for lid in graph.of_type("Assign") if graph.layers[lid].attrs.get("variable_id") in read
            and all(src in given or src[0] in needed for src in graph.inputs_of(lid))}


def _lone_reads(compiled: CompiledModel, layers: Sequence[int]) -> list[Source]:
    """The outputs of the ReadValues among `layers` whose variable no Assign among them writes.
    A model holding such a ReadValue is valid, but OpenVINO's CPU plugin cannot run it (it
    pairs each ReadValue with its Assign), so a cut feeds that value as an input instead."""
    kinds = [compiled.graph.layers[lid] for lid in layers]
    written = {layer.attrs.get("variable_id") for layer in kinds if layer.type == "Assign"}
    return [(layer.id, 0) for layer in kinds
            if layer.type == "ReadValue" and layer.attrs.get("variable_id") not in written]


def prefix(compiled: CompiledModel, order: Sequence[int], end: int, values: Mapping[Source, np.ndarray]) -> Cut:
    """The layers `order[0..end]` fed the model's inputs, returning every tensor of theirs that
    a later layer or a Result reads (when none is, the last layer's own outputs)."""
    graph = compiled.graph
    inside = set(order[: end + 1])
    wanted = [src for lid in graph.order if lid not in inside for src in graph.inputs_of(lid)
              if src[0] in inside and src in values]
    if not wanted:
        wanted = [src for src in graph.outputs_of(order[end]) if src in values]
    model_inputs = [(spec.layer.id, 0) for spec in compiled.inputs]
    return plan(compiled, list(dict.fromkeys(wanted)), model_inputs, require_used=False)


def first_holding(low: int, high: int, holds: Callable[[int], bool]) -> int:
    """The smallest index in (low, high] where `holds` is true, by halving, given that it holds
    at `high` and is taken not to at `low`: a boundary between the two, the first one when
    `holds` stays true once it is."""
    while high - low > 1:
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle
    return high


def around(compiled: CompiledModel, layer_name: str, hops: int) -> Cut:
    """The layers within `hops` edges of the named layer (either direction): its outputs are
    the tensors of that neighbourhood read outside it (or by a Result), its inputs the tensors
    from outside that it reads."""
    graph = compiled.graph
    matches = graph.named(layer_name)
    if not matches:
        raise UsageError(Argument("layer_name"), f': the model has no layer named "{layer_name}"', value=layer_name)
    inside = {matches[0]}
    frontier = set(inside)
    for _ in range(hops):
        reached = set()
        for lid in frontier:
            reached |= {s[0] for s in graph.inputs_of(lid)}
            reached |= {reader for src in graph.outputs_of(lid) for reader, _ in graph.readers(src)}
        frontier = {lid for lid in reached - inside if graph.type_of(lid) != "Result"}
        if not frontier:
            break  # the whole connected part is inside: more hops reach nothing new
        inside |= frontier
    inside = {lid for lid in inside if graph.type_of(lid) not in BOUNDARY}
    outputs, inputs = [], []
    for lid in graph.order:
        if lid in inside:
            outputs += [src for src in graph.outputs_of(lid)
                        if any(reader not in inside for reader, _ in graph.readers(src))]
            inputs += [src for src in graph.inputs_of(lid) if src[0] not in inside and graph.type_of(src[0]) != "Const"]
    if not outputs:  # nothing reads the neighbourhood: return the named layer's own outputs
        outputs = list(graph.outputs_of(matches[0]))
    return plan(compiled, outputs, list(dict.fromkeys(inputs)))


@dataclass(frozen=True)
class Written:
    xml: Path
    input_names: dict[Source, str]  # each cut input's Parameter name
    output_names: dict[Source, str]  # each output's name, as `run` keys it


def write(compiled: CompiledModel, cut: Cut, xml: str | Path, values: Mapping[Source, np.ndarray] | None = None,
          *, frozen: Mapping[Source, np.ndarray] | None = None, name: str | None = None) -> Written:
    """Write `cut` as a standalone IR at `xml` (and its `.bin`). With `values` (irscatter's
    value of every tensor), also `inputs.npz` and `expected.npz` beside it. `frozen` inputs
    are written as Consts holding the value given, not as Parameters."""
    xml = Path(xml)
    frozen = frozen or {}
    _check_state_pairs(compiled, cut)
    graph = compiled.graph
    writer = IRWriter(name or f"{compiled.model.name or 'model'}_cut", rt_info=compiled.model.rt_info)
    made: dict[Source, Tensor] = {}
    input_names: dict[Source, str] = {}
    taken: set[str] = set()
    for src in cut.inputs:
        info = graph.infos[src]
        if src in frozen:
            made[src] = writer.const(_unique(tensor_key(compiled, src), taken), frozen[src], info.etype)
            continue
        port = graph.layers[src[0]].outputs[src[1]]
        pname = _unique(port.names[0] if port.names else tensor_key(compiled, src), taken)
        # The shape irscatter infers from the model's declared inputs, not the fed value's: a
        # failure only a dynamic shape brings out must still reproduce in the cut.
        made[src] = writer.parameter(pname, info.etype, info.shape, (pname, *[n for n in port.names if n != pname]))
        input_names[src] = pname
    for lid in cut.layers:
        layer = graph.layers[lid]
        if layer.type == "Parameter":
            spec = next(s for s in compiled.inputs if s.layer.id == lid)
            pname = _unique(spec.name, taken)
            made[(lid, 0)] = writer.parameter(pname, spec.etype, spec.shape, spec.names or (pname,),  # as declared
                                              rt_info=layer.rt_info, port_rt_info=layer.outputs[0].rt_info)
            input_names[(lid, 0)] = pname
        elif layer.type == "Const":
            made[(lid, 0)] = writer.const(layer.name, layer.const_value, graph.infos[(lid, 0)].etype)
        else:
            sources = [made.get(s) if s is not None else None for s in graph.sources[lid]]
            ins = [typed(compiled, values, s) for s in graph.sources[lid]]
            outs = [typed(compiled, values, (lid, p)) for p in range(len(layer.outputs))]
            # An output with no tensor name gets its "<layer>:<port>" key, so that every runtime
            # reports it under the name irscatter gives it.
            names = [p.names or (((tensor_key(compiled, (lid, pos)),) if (lid, pos) in cut.outputs else ()))
                     for pos, p in enumerate(layer.outputs)]
            for pos, tensor in enumerate(writer.copy(layer, sources, ins, outs, output_names=names)):
                made[(lid, pos)] = tensor
    output_names: dict[Source, str] = {}
    for src in cut.outputs:
        port = graph.layers[src[0]].outputs[src[1]]
        out_name = port.names[0] if port.names else tensor_key(compiled, src)
        if src in input_names:  # an output that is also fed: the Parameter's own name
            out_name = input_names[src]
        etype, shape = typed(compiled, values, src)
        writer.result(f"{out_name}/result", made[src], etype, shape)
        output_names[src] = out_name
    xml.parent.mkdir(parents=True, exist_ok=True)
    writer.save(xml)
    # Keyed as the written model names its outputs (a Const's or a Parameter's tensor may carry
    # another name there, or none): read back, which also proves the reproducer loads.
    output_names = dict(zip(cut.outputs, _output_names(read_model(xml))))
    if values is not None:
        save_npz(xml.parent / "inputs.npz", {n: values[s] for s, n in input_names.items()})
        save_npz(xml.parent / "expected.npz", {n: values[s] for s, n in output_names.items()})
    return Written(xml, input_names, output_names)


def _check_state_pairs(compiled: CompiledModel, cut: Cut) -> None:
    """An Assign needs its variable's ReadValue in the same model, or the cut would not load."""
    kinds = {lid: compiled.graph.layers[lid] for lid in cut.layers}
    read = {layer.attrs.get("variable_id") for layer in kinds.values() if layer.type == "ReadValue"}
    for layer in kinds.values():
        if layer.type == "Assign" and layer.attrs.get("variable_id") not in read:
            raise UsageError(f'the cut holds {layer.ref}, which writes variable "{layer.attrs.get("variable_id")}", '
                             "but not the ReadValue that declares it: widen the cut (", Argument("hops"),
                             ") or cut elsewhere", argument="cut")


def _output_names(model: Model) -> list[str]:
    """The names a model's outputs go by, in the order of its Results."""
    ports = {(layer.id, port.id): port for layer in model.layers for port in layer.outputs}
    feeding = {(e.to_layer, e.to_port): ports.get((e.from_layer, e.from_port)) for e in model.edges}
    return [output_name(r, feeding.get((r.id, r.inputs[0].id)) if r.inputs else None)
            for r in model.layers_of_type("Result")]


def _unique(name: str, taken: set[str]) -> str:
    base, n = name, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


@overload
def typed(compiled: CompiledModel, values: Mapping[Source, np.ndarray] | None,
          src: Source) -> tuple[ElementType, tuple[int, ...] | None]: ...


@overload
def typed(compiled: CompiledModel, values: Mapping[Source, np.ndarray] | None,
          src: Source | None) -> tuple[ElementType | None, tuple[int, ...] | None]: ...


def typed(compiled: CompiledModel, values: Mapping[Source, np.ndarray] | None,
          src: Source | None) -> tuple[ElementType | None, tuple[int, ...] | None]:
    """A tensor's element type and shape as a written port declares them: the shape of its
    value when there is one, else the inferred shape when static (None: unknown). Only an
    input no edge reaches (`src` None) has no element type."""
    if src is None:
        return None, None
    info = compiled.graph.infos[src]
    if values is not None and src in values:
        value = values[src]
        if info.etype is ElementType.dynamic:  # a Parameter of dynamic type: the type it was fed
            return ElementType.from_dtype(value.dtype), tuple(value.shape)
        return info.etype, tuple(value.shape)
    return info.etype, info.shape.to_tuple() if info.shape.is_static else None


def values_from_dump(compiled: CompiledModel, dump: Mapping[str, np.ndarray]) -> dict[Source, np.ndarray]:
    """A dump keyed `"<layer name>:<port id>"` (run --dump) as values keyed by tensor."""
    index = tensor_index(compiled)
    out = {}
    for key, value in dump.items():
        if key in index:
            out[index[key]] = np.asarray(value)
    for lid in compiled.graph.of_type("Const"):
        out.setdefault((lid, 0), compiled.graph.layers[lid].const_value)
    return out


def file_safe(name: str) -> str:
    """A tensor or layer name as a file name."""
    return _SAFE.sub("_", name)[:80] or "tensor"
