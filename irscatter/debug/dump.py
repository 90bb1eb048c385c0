"""Intermediate values of a run: choosing them, saving them, their statistics, and the first
layer that turns finite inputs into NaN or infinity.

Every tensor is keyed as `run(feeds, intermediate=True)` keys it, `"<layer name>:<port id>"`,
and a value inside the body of an If, Loop or TensorIterator as `"<outer layer>/<body>[<i>]/
<inner layer>:<port id>"`. A filtered selection is taken through the run's hook, which sees
each layer's inputs and outputs as they are computed, so only the chosen tensors are kept.

A hook is called for the layers that run a kernel. Parameters and Consts run none: their
values are taken where a layer reads them (the hook's inputs), and a model's Parameter or
Const that only a Result reads is taken from the run's outputs. A body's Const that only a
body Result reads (a Loop's "continue" condition, typically) holds the same value in every
iteration, and is taken from the Const itself when the body's first layer runs. A body's
Parameter that only a body Result reads is seen by no hook at all: a selection that may
contain one is taken from `intermediate=True` instead, which records every value.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from irscatter.errors import PATTERN_ERRORS, LayerRef, UsageError, elide
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer
from irscatter.runtime.graph_view import GraphView
from irscatter.runtime.interpreter import CompiledModel, Outputs
from irscatter.runtime.subgraph import Subgraph

_VALUE_LAYERS = ("Parameter", "Const")  # layers that hold a value and run no kernel

Visit = Callable[[str, LayerRef, np.ndarray], None]


# --- which tensors ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """Which tensors to take: those of layers whose name (with its body path, as in the keys)
    the pattern finds (`re.search`), and whose type is one of `types` ((type in lower case,
    version) pairs, version None for any). An empty selection takes every tensor."""

    pattern: re.Pattern[str] | None = None
    types: frozenset[tuple[str, str | None]] = frozenset()

    @property
    def everything(self) -> bool:
        return self.pattern is None and not self.types

    def admits_type(self, ref: LayerRef) -> bool:
        type_name = ref.type.lower()
        return not self.types or (type_name, None) in self.types or (type_name, ref.version) in self.types

    def wants(self, ref: LayerRef) -> bool:
        return self.admits_type(ref) and (self.pattern is None or self.pattern.search(ref.name) is not None)


EVERYTHING = Selection()


def select(compiled: CompiledModel, layers: str | None = None, types: str | Iterable[str] | None = None) -> Selection:
    """A selection from a regular expression over layer names and op type names ("MatMul", or
    "Convolution-1" for one version; a string is split at commas; any letter case, as the op
    registry reads types). A pattern that does not compile and a type that no layer of the
    model (bodies included) has are refused."""
    pattern = None
    if layers is not None:
        try:
            pattern = re.compile(layers)
        except PATTERN_ERRORS as e:
            raise UsageError(f'the layer pattern "{elide(layers)}" is not a regular expression: {e}') from None
    wanted: set[tuple[str, str | None]] = set()
    if types is not None:
        names = [t.strip() for t in (types.split(",") if isinstance(types, str) else types)]
        if not all(names):
            raise UsageError(f'the type list "{",".join(names)}" has an empty name')
        present = {layer.ref for layer in _Scopes(compiled).every_layer()}
        for name in names:
            wanted.add(_type_and_version(name, present))
    return Selection(pattern, frozenset(wanted))


def _type_and_version(name: str, present: set[LayerRef]) -> tuple[str, str | None]:
    type_name, dash, version = name.rpartition("-")
    if not (dash and version.isdigit() and type_name):
        type_name, version = name, ""
    spelled = sorted({ref.type for ref in present if ref.type.lower() == type_name.lower()})
    versions = sorted({ref.version for ref in present if ref.type.lower() == type_name.lower()})
    if not versions:
        known = ", ".join(sorted({ref.type for ref in present}))
        raise UsageError(f'no layer of the model is of type "{type_name}" (its types are {known})')
    if version and version not in versions:
        raise UsageError(f'no layer of the model is {type_name}-{version} (its {spelled[0]} layers are '
                         + ", ".join(f"{spelled[0]}-{v}" for v in versions) + ")")
    return type_name.lower(), version or None


class _Scopes:
    """Every graph a run goes through, the model's own and its bodies' (nested as deep as they
    are), and where each layer a hook reports lives in them.

    A hook reports a body's layer as a copy renamed with the body's path. The copy is shallow,
    so it holds the very port list of the layer it was made from: that list's identity says
    which graph, and so which wiring, the layer belongs to."""

    def __init__(self, compiled: CompiledModel) -> None:
        self.graphs: list[tuple[GraphView, bool]] = []  # (graph, whether it is a body)
        self._home: dict[int, tuple[GraphView, int]] = {}
        # Per body: its Parameters and Consts that no layer of the body reads (only Results).
        self.unread: dict[int, list[Layer]] = {}
        self._entered: set[tuple[int, str]] = set()  # (body, path) whose first layer has run
        self._add(compiled.graph, False)

    def _add(self, graph: GraphView, is_body: bool) -> None:
        self.graphs.append((graph, is_body))
        for lid in graph.order:
            self._home[id(graph.layers[lid].inputs)] = (graph, lid)
            for body in _subgraphs(graph.op(lid)):
                self._add(body.model.graph, True)
        if is_body:
            read = {source[0] for lid in graph.kernels for source in graph.inputs_of(lid)}
            self.unread[id(graph)] = [graph.layers[lid] for lid in graph.of_type(*_VALUE_LAYERS) if lid not in read]

    def every_layer(self) -> Iterator[Layer]:
        for graph, _ in self.graphs:
            for lid in graph.order:
                yield graph.layers[lid]

    def locate(self, layer: Layer) -> tuple[GraphView, int, str]:
        """The graph of a reported layer, its id there, and the path its name was given."""
        graph, lid = self._home[id(layer.inputs)]
        return graph, lid, layer.name[: len(layer.name) - len(graph.layers[lid].name)]

    def unseen(self) -> list[Layer]:
        """The body values no hook call shows: unread Parameters, and the unread Consts of a
        body in which no layer runs at all."""
        found = []
        for graph, is_body in self.graphs:
            if is_body:
                found += [layer for layer in self.unread[id(graph)] if layer.type == "Parameter" or not graph.kernels]
        return found

    def entered(self, graph: GraphView, prefix: str) -> list[Layer]:
        """The unread Consts of a body, the first time a layer of this run of it is reported."""
        if id(graph) not in self.unread or (id(graph), prefix) in self._entered:
            return []
        self._entered.add((id(graph), prefix))
        return [layer for layer in self.unread[id(graph)] if layer.type == "Const"]


def _subgraphs(op: Any) -> Iterator[Subgraph]:
    """The compiled bodies an op holds (a Loop's `body`, an If's branches), wherever it keeps them."""
    for value in vars(op).values():
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, Subgraph):
                yield item
            elif isinstance(item, tuple):
                yield from (part for part in item if isinstance(part, Subgraph))


def _key(prefix: str, layer: Layer, position: int) -> str:
    return f"{prefix}{layer.name}:{layer.outputs[position].id}"


def _named(layer: Layer, prefix: str) -> LayerRef:
    return dataclasses.replace(layer.ref, name=prefix + layer.name)


def _watch(compiled: CompiledModel, feeds: Any, selection: Selection, visit: Visit) -> Outputs:
    """Run the model once and call `visit(key, layer, value)` for each selected tensor in the
    order the run makes them (a Parameter or Const when it is first read); return the outputs."""
    scopes = _Scopes(compiled)
    if any(selection.admits_type(layer.ref) for layer in scopes.unseen()):
        return _watch_recorded(compiled, feeds, selection, visit, scopes)
    seen: set[str] = set()

    def hook(layer: Layer, inputs: tuple[np.ndarray, ...], outputs: tuple[np.ndarray, ...]) -> None:
        for key, ref, value in _tensors_of_step(scopes, layer, inputs, outputs):
            if key not in seen and selection.wants(ref):
                if ref.type in _VALUE_LAYERS:  # read again by other layers: visited once
                    seen.add(key)
                visit(key, ref, value)

    outputs = compiled.run(feeds, hook=hook)
    for spec, value in zip(compiled.outputs, outputs.values()):
        source = compiled.graph.producer(spec.layer.id)
        if source is not None:
            layer = compiled.graph.layers[source[0]]
            key = compiled.graph.tensor_key(source)
            if layer.type in _VALUE_LAYERS and key not in seen and selection.wants(layer.ref):
                seen.add(key)
                visit(key, layer.ref, value)
    return outputs


def _tensors_of_step(scopes: _Scopes, layer: Layer, inputs: tuple[np.ndarray, ...],
                     outputs: tuple[np.ndarray, ...]) -> Iterator[tuple[str, LayerRef, np.ndarray]]:
    """What a hook call shows: the Parameters and Consts among the layer's inputs, then its outputs."""
    graph, lid, prefix = scopes.locate(layer)
    for const in scopes.entered(graph, prefix):
        yield _key(prefix, const, 0), _named(const, prefix), const.const_value
    for value, source in zip(inputs, graph.sources[lid]):
        if source is not None and graph.layers[source[0]].type in _VALUE_LAYERS:
            producer = graph.layers[source[0]]
            yield _key(prefix, producer, source[1]), _named(producer, prefix), value
    for position, value in enumerate(outputs):
        if value is not None:
            yield f"{layer.name}:{layer.outputs[position].id}", layer.ref, value


def _watch_recorded(compiled: CompiledModel, feeds: Any, selection: Selection, visit: Visit,
                    scopes: _Scopes) -> Outputs:
    """`_watch` from a record of every value (`intermediate=True`); a hook only gives the order."""
    order: dict[str, LayerRef] = {}

    def hook(layer: Layer, inputs: tuple[np.ndarray, ...], outputs: tuple[np.ndarray, ...]) -> None:
        for key, ref, _ in _tensors_of_step(scopes, layer, inputs, outputs):
            order.setdefault(key, ref)

    record = compiled.run(feeds, intermediate=True, hook=hook)
    # What no hook saw: Parameters and Consts read by Results alone, named by their key's tail.
    values = {layer.name + ":" + str(port.id): layer for layer in scopes.every_layer()
              if layer.type in _VALUE_LAYERS for port in layer.outputs}
    for key in record:
        if key not in order:
            tail = max((t for t in values if key == t or key.endswith("/" + t)), key=len, default=None)
            if tail is not None:
                order[key] = _named(values[tail], key[: len(key) - len(tail)])
    for key, ref in order.items():
        if key in record and selection.wants(ref):
            visit(key, ref, record[key])
    outputs = {}
    for spec in compiled.outputs:
        outputs[spec.name] = record[compiled.graph.tensor_key(compiled.graph.returned(spec.layer.id))]
    return Outputs(zip(outputs, _copies(list(outputs.values()))))


def _copies(values: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs as arrays of their own, as a plain run returns them (a record's may be views)."""
    return [np.array(value, copy=True) for value in values]


# --- dumps --------------------------------------------------------------------------------------


@dataclass
class Dump:
    """The selected tensors of one run, keyed and ordered as the run made them, and the
    run's outputs keyed by output name."""

    tensors: dict[str, np.ndarray]
    outputs: Outputs
    output_ports: dict[str, str] = dataclasses.field(default_factory=dict)  # output name -> its port's key

    def arrays(self) -> dict[str, np.ndarray]:
        """What a dump file holds: the tensors by port ("<layer name>:<port id>"), and each
        output under its name as well; an output whose name is the address of another port
        (a tensor named "Relu:1" beside output 1 of a layer named "Relu") under "tensor:<name>",
        so that neither value hides the other."""
        named = {}
        for name, value in self.outputs.items():
            if name not in self.tensors:
                named[name] = value
            elif self.output_ports.get(name, name) != name:  # the name is another port's address
                named[f"tensor:{name}"] = value
        return {**self.tensors, **named}


def dump_tensors(compiled: CompiledModel, feeds: Any, selection: Selection = EVERYTHING) -> Dump:
    """Run once and keep the selected tensors. The values are the interpreter's arrays as
    computed: with a hook or a record of values the interpreter reuses no buffer, so none is
    overwritten later in the run, and holding them costs nothing beyond what was chosen."""
    tensors: dict[str, np.ndarray] = {}
    outputs = _watch(compiled, feeds, selection, lambda key, ref, value: tensors.__setitem__(key, value))
    ports = {}
    for spec in compiled.outputs:
        source = compiled.graph.producer(spec.layer.id)
        if source is not None:
            ports[spec.name] = compiled.graph.tensor_key(source)
    return Dump(tensors, outputs, ports)


# --- statistics ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    """What a tensor holds. For floats, min, max, mean and std (population, ddof=0) are
    computed in f64 over the finite values only, and are None when there are none; NaN, +Inf,
    -Inf and zeros (either sign) are counted. For integers min and max are exact, the mean is
    the exact sum divided by the count (correctly rounded) and the std is computed in f64.
    Booleans have counts only (`zeros` is the count of False, `true` of True); strings only
    their size."""

    element_type: str
    shape: tuple[int, ...]
    min: float | int | None = None
    max: float | int | None = None
    mean: float | None = None
    std: float | None = None
    nan: int | None = None
    pos_inf: int | None = None
    neg_inf: int | None = None
    zeros: int | None = None
    true: int | None = None

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nonfinite(self) -> int:
        return (self.nan or 0) + (self.pos_inf or 0) + (self.neg_inf or 0)

    def to_json(self) -> dict[str, Any]:
        return {"element_type": self.element_type, "shape": list(self.shape), "size": self.size,
                "min": self.min, "max": self.max, "mean": self.mean, "std": self.std, "nan": self.nan,
                "pos_inf": self.pos_inf, "neg_inf": self.neg_inf, "zeros": self.zeros, "true": self.true}


def _element_type(dtype: np.dtype) -> ElementType | None:
    try:
        return ElementType.from_dtype(dtype)
    except ValueError:
        return None


def _is_float(dtype: np.dtype) -> bool:
    etype = _element_type(dtype)
    return etype.is_float if etype is not None else dtype.kind == "f"


def _is_string(dtype: np.dtype) -> bool:
    return dtype.kind in "OSTU"


def tensor_stats(value: Any) -> Stats:
    """The statistics of one tensor (see `Stats`)."""
    array = np.asarray(value)
    etype = _element_type(array.dtype)
    base = Stats(str(etype) if etype is not None else str(array.dtype), tuple(int(d) for d in array.shape))
    if _is_string(array.dtype):
        return base
    if array.dtype == np.bool_:
        true = int(np.count_nonzero(array))
        return dataclasses.replace(base, zeros=array.size - true, true=true)
    if _is_float(array.dtype):
        return _float_stats(base, array)
    return _integer_stats(base, array)


def _float_stats(base: Stats, array: np.ndarray) -> Stats:
    values = array.astype(np.float64, copy=False).ravel()
    nan = int(np.count_nonzero(np.isnan(values)))
    pos_inf = int(np.count_nonzero(values == np.inf))
    neg_inf = int(np.count_nonzero(values == -np.inf))
    counted = dataclasses.replace(base, nan=nan, pos_inf=pos_inf, neg_inf=neg_inf,
                                  zeros=int(np.count_nonzero(values == 0)))
    finite = values if nan + pos_inf + neg_inf == 0 else values[np.isfinite(values)]
    if finite.size == 0:
        return counted
    return dataclasses.replace(counted, min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()),
                               std=float(finite.std()))


def _integer_stats(base: Stats, array: np.ndarray) -> Stats:
    zeros = int(array.size - np.count_nonzero(array))
    if array.size == 0:
        return dataclasses.replace(base, nan=0, pos_inf=0, neg_inf=0, zeros=zeros)
    return dataclasses.replace(base, min=int(array.min()), max=int(array.max()),
                               mean=_exact_sum(array) / array.size, std=float(array.std(dtype=np.float64)),
                               nan=0, pos_inf=0, neg_inf=0, zeros=zeros)


def _exact_sum(array: np.ndarray) -> int:
    """The sum of integers without overflow or rounding: the high and low 32 bits of each value
    are summed apart (each partial sum fits 64 bits for any tensor below 2**31 elements)."""
    wide = array.astype(np.uint64 if array.dtype.kind == "u" else np.int64, copy=False).ravel()
    high = np.sum(wide >> 32, dtype=wide.dtype)
    low = np.sum(wide & wide.dtype.type(0xFFFFFFFF), dtype=np.uint64)
    return (int(high) << 32) + int(low)


def run_stats(compiled: CompiledModel, feeds: Any, selection: Selection = EVERYTHING) -> tuple[dict[str, Stats], Outputs]:
    """Run once and take the statistics of each selected tensor as it is made, keeping no value."""
    stats: dict[str, Stats] = {}
    outputs = _watch(compiled, feeds, selection, lambda key, ref, value: stats.__setitem__(key, tensor_stats(value)))
    return stats, outputs


def _number(value: float | int | None) -> str:
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.6g}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _shape(shape: Iterable[int]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


STATS_HEADER = ("tensor", "type", "shape", "min", "max", "mean", "std", "nan", "+inf", "-inf", "zeros")


def stats_rows(stats: Mapping[str, Stats]) -> list[tuple[str, ...]]:
    """One row of text per tensor under `STATS_HEADER` (a boolean's `true` count stands in its mean
    column as "true=N")."""
    rows: list[tuple[str, ...]] = []
    for key, s in stats.items():
        mean = f"true={s.true}" if s.true is not None else _number(s.mean)
        rows.append((key, s.element_type, _shape(s.shape), _number(s.min), _number(s.max), mean, _number(s.std),
                     _count(s.nan), _count(s.pos_inf), _count(s.neg_inf), _count(s.zeros)))
    return rows


def stats_table(stats: Mapping[str, Stats]) -> str:
    """The statistics as an aligned table, in the order given (the run's), numbers right-aligned."""
    rows = [STATS_HEADER, *stats_rows(stats)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(STATS_HEADER))]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) if i < 3 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def stats_json(stats: Mapping[str, Stats]) -> list[dict[str, Any]]:
    """The statistics as JSON records, one per tensor in run order: {"tensor": key, ...Stats}."""
    return [{"tensor": key, **s.to_json()} for key, s in stats.items()]


# --- NaN and infinity ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NonFinite:
    """A tensor holding NaN or infinity, and where it came from: `origin` is "layer" (the layer
    made it from inputs that were all finite, `inputs` holds their statistics), "input" (a
    value fed to the model) or "constant" (a Const's value)."""

    origin: str
    layer: LayerRef
    line: int | None
    tensor: str
    port: int
    nan: int
    pos_inf: int
    neg_inf: int
    size: int
    first_index: tuple[int, ...]
    first_value: str
    inputs: tuple[tuple[int, str | None, Stats], ...] = ()  # (input port id, source tensor key, stats)

    def describe(self) -> str:
        """A few lines for people: the layer, the counts and first position, then the inputs."""
        counts = ", ".join(f"{n} {what}" for n, what in ((self.nan, "NaN"), (self.pos_inf, "+Inf"),
                                                         (self.neg_inf, "-Inf")) if n)
        where = f"{self.layer}" + (f" (line {self.line})" if self.line is not None else "")
        first = f"first at {_shape(self.first_index)} ({self.first_value})"
        if self.origin == "input":
            return f"model input {where} holds {counts} of {self.size} values, {first}: NaN/Inf came in through the inputs"
        if self.origin == "constant":
            return f"constant {where} holds {counts} of {self.size} values, {first}"
        lines = [f"{where} output port {self.port} (tensor \"{self.tensor}\"): {counts} of {self.size} values, {first}",
                 "    from finite inputs:" if self.inputs else "    from no input"]
        for port, source, s in self.inputs:
            lines.append(f"      input port {port} ({source or '?'}): {s.element_type} {_shape(s.shape)} "
                         f"min {_number(s.min)} max {_number(s.max)} mean {_number(s.mean)} std {_number(s.std)}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"origin": self.origin,
                "layer": {"id": self.layer.id, "name": self.layer.name, "type": self.layer.type,
                          "version": self.layer.version},
                "line": self.line, "tensor": self.tensor, "port": self.port, "nan": self.nan,
                "pos_inf": self.pos_inf, "neg_inf": self.neg_inf, "size": self.size,
                "first_index": list(self.first_index), "first_value": self.first_value,
                "inputs": [{"port": port, "tensor": source, **s.to_json()} for port, source, s in self.inputs]}


def _nonfinite_mask(value: Any) -> np.ndarray | None:
    """Where a float tensor is NaN or infinite, or None when it is all finite (or not float)."""
    array = np.asarray(value)
    if not _is_float(array.dtype) or array.size == 0:
        return None
    finite = np.isfinite(array if array.dtype.kind == "f" else array.astype(np.float64))
    return None if finite.all() else ~finite


def _finding(origin: str, layer: LayerRef, line: int | None, tensor: str, port: int, value: Any,
             mask: np.ndarray, inputs: tuple = ()) -> NonFinite:
    array = np.asarray(value).astype(np.float64, copy=False)
    flat = int(np.argmax(mask.ravel()))
    first = array.ravel()[flat]
    return NonFinite(origin=origin, layer=layer, line=line, tensor=tensor, port=port,
                     nan=int(np.count_nonzero(np.isnan(array))), pos_inf=int(np.count_nonzero(array == np.inf)),
                     neg_inf=int(np.count_nonzero(array == -np.inf)), size=int(array.size),
                     first_index=tuple(int(i) for i in np.unravel_index(flat, array.shape)),
                     first_value="nan" if np.isnan(first) else "+inf" if first > 0 else "-inf", inputs=inputs)


class _FirstFound(Exception):
    """Ends a run early once the first layer that makes NaN or infinity is known."""


def find_nonfinite(compiled: CompiledModel, feeds: Any, first_only: bool = True) -> list[NonFinite]:
    """Run once and report every layer that makes NaN or infinity from inputs that are all
    finite, in the order they ran (only the first with `first_only`, which stops the run
    there). A layer that reads a non-finite value is not blamed for passing it on, and a layer
    whose body made the value is not blamed beside the body's layer. Model inputs and Consts
    that hold NaN or infinity are reported too (origin "input" or "constant"), once each, when
    a layer first reads them."""
    scopes = _Scopes(compiled)
    found: list[NonFinite] = []
    reported: set[tuple[int, int]] = set()  # (graph, Parameter or Const id) already reported

    def hook(layer: Layer, inputs: tuple[np.ndarray, ...], outputs: tuple[np.ndarray, ...]) -> None:
        graph, lid, prefix = scopes.locate(layer)
        clean = True
        for value, source in zip(inputs, graph.sources[lid]):
            mask = _nonfinite_mask(value)
            if mask is None:
                continue
            clean = False
            if source is None:
                continue
            producer = graph.layers[source[0]]
            if (id(graph), producer.id) in reported:
                continue
            origin = "input" if producer.type == "Parameter" and graph is compiled.graph else \
                "constant" if producer.type == "Const" else None
            if origin is not None:  # a body's Parameter carries what an outer layer made
                reported.add((id(graph), producer.id))
                found.append(_finding(origin, _named(producer, prefix), producer.line,
                                      _key(prefix, producer, source[1]), producer.outputs[source[1]].id, value, mask))
        if not clean or any(f.tensor.startswith(layer.name + "/") for f in found):
            return
        for position, value in enumerate(outputs):
            mask = _nonfinite_mask(value)
            if mask is not None:
                found.append(_finding("layer", layer.ref, layer.line, f"{layer.name}:{layer.outputs[position].id}",
                                      layer.outputs[position].id, value, mask,
                                      _input_stats(graph, lid, prefix, inputs)))
        if first_only and any(f.origin == "layer" for f in found):
            raise _FirstFound

    try:
        compiled.run(feeds, hook=hook)
    except _FirstFound:
        pass
    return found


def _input_stats(graph: GraphView, lid: int, prefix: str,
                 inputs: tuple[np.ndarray, ...]) -> tuple[tuple[int, str | None, Stats], ...]:
    layer = graph.layers[lid]
    described = []
    for i, (value, source) in enumerate(zip(inputs, graph.sources[lid])):
        key = _key(prefix, graph.layers[source[0]], source[1]) if source is not None else None
        port = layer.inputs[i].id if i < len(layer.inputs) else i
        described.append((port, key, tensor_stats(value)))
    return tuple(described)


def nonfinite_summary(found: list[NonFinite]) -> str:
    """One closing line: which layer first made NaN or infinity, or that none did."""
    layers = [f for f in found if f.origin == "layer"]
    if not layers:
        came_in = any(f.origin == "input" for f in found)
        return "no layer makes NaN or Inf from finite inputs" + (
            " (NaN/Inf came in through the model's inputs)" if came_in else "")
    first = layers[0]
    more = f"; {len(layers)} layers in all" if len(layers) > 1 else ""
    return f"first NaN/Inf made by {first.layer}" + (f" (line {first.line})" if first.line is not None else "") + more
