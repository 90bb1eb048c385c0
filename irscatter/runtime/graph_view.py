"""The analysed graph of a compiled model, as tools outside the runtime may read it.

`CompiledModel.graph` is a `GraphView`: what compiling found about the model's graph, and the
small queries the debugging tools ask of it. It is the stable contract between the runtime and
everything that inspects a compiled model (debug/, the CLI, a user's script):

* `order`: the ids of the layers that run, producers before consumers, Parameters, Consts and
  Results included (the layers no Result or sink needs are left out).
* `layers`: every layer of the model by id (a `Layer` of `ir/graph.py`).
* `sources`: per layer, what feeds each of its input ports, in port order: the producing
  output as (layer id, output position), or None for an input no edge reaches.
* `infos`: the `TensorInfo` inference gave each output of the layers in `order`, keyed
  (layer id, output position).
* `kernels`: the layers of `order` that run a kernel (every one but Parameters, Consts and
  Results), in the order they run.
* `op(id)`, `type_of(id)`, `inputs_of(id)`, `outputs_of(id)`, `producer(id, position)`,
  `returned(result id)`, `readers(output)`, `tensors()`, `named(name)`, `of_type(*types)`,
  `tensor_key(output)`, `infer(overrides)` and `recheck(overrides, previous)`, each described
  where it is defined.

A view never changes: its mappings are read-only (`types.MappingProxyType`), its sequences
tuples, and every answer a new tuple or value, so no tool can change what the compiled model
runs. Everything else a compiled model holds (its plan, value slots and steps, buffers,
folded values) is the runtime's own, free to change between versions, and no module outside
runtime/ reads it (`tests/test_architecture.py` holds that).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from irscatter.checks.infer import infer_graph, reinfer_changed
from irscatter.ir.graph import Layer
from irscatter.ir.topology import Source
from irscatter.ops.base import Op, TensorInfo

# Layers that hold or hand over a value and run no kernel.
BOUNDARY = frozenset({"Parameter", "Const", "Result"})


@dataclass(frozen=True, eq=False)
class GraphView:
    """A read-only view of a compiled model's analysed graph (see the module's docstring)."""

    order: tuple[int, ...]
    layers: Mapping[int, Layer]
    sources: Mapping[int, tuple[Source | None, ...]]
    infos: Mapping[Source, TensorInfo]
    kernels: tuple[int, ...]
    _ops: Mapping[int, Op] = field(repr=False)

    @classmethod
    def of(cls, order: Iterable[int], layers: Mapping[int, Layer], sources: Mapping[int, Iterable[Source | None]],
           infos: Mapping[Source, TensorInfo], ops: Mapping[int, Op]) -> GraphView:
        """The view of what compiling found; the arguments are copied where they could change."""
        order = tuple(order)
        return cls(order, MappingProxyType(dict(layers)),
                   MappingProxyType({lid: tuple(srcs) for lid, srcs in sources.items()}),
                   MappingProxyType(dict(infos)),
                   tuple(lid for lid in order if layers[lid].type not in BOUNDARY),
                   MappingProxyType(dict(ops)))

    def op(self, lid: int) -> Op:
        """The op a layer of `order` resolved to, its attributes parsed."""
        return self._ops[lid]

    def type_of(self, lid: int) -> str:
        return self.layers[lid].type

    def inputs_of(self, lid: int) -> tuple[Source, ...]:
        """The outputs a layer reads, in input order, leaving out inputs no edge reaches."""
        return tuple(src for src in self.sources.get(lid, ()) if src is not None)

    def outputs_of(self, lid: int) -> tuple[Source, ...]:
        """The outputs of a layer, as (layer id, output position)."""
        return tuple((lid, pos) for pos in range(len(self.layers[lid].outputs)))

    def producer(self, lid: int, position: int = 0) -> Source | None:
        """What feeds input `position` of a layer (for a Result, what the model returns)."""
        feeding = self.sources[lid]
        return feeding[position] if position < len(feeding) else None

    def returned(self, result: int) -> Source:
        """The output a Result of `order` returns. Compiling refuses an input port no edge
        reaches on a layer that runs, so a Result of a compiled model always has one."""
        src = self.producer(result)
        if src is None:
            raise ValueError(f"{self.layers[result].ref} returns nothing: no edge reaches its input")
        return src

    def readers(self, src: Source) -> tuple[tuple[int, int], ...]:
        """Every input port of the layers in `order` that reads output `src`, as (layer id,
        input position), in the order the layers run: a layer reading it twice is there twice."""
        return self._readers.get(src, ())

    def tensors(self) -> tuple[Source, ...]:
        """Every output of every layer in `order`, in the order they are made."""
        return tuple(src for lid in self.order for src in self.outputs_of(lid))

    def named(self, name: str) -> tuple[int, ...]:
        """The layers of `order` called `name` (names need not be unique), in run order."""
        return self._by_name.get(name, ())

    def of_type(self, *types: str) -> tuple[int, ...]:
        """The layers of `order` of one of `types`, in run order."""
        return tuple(lid for lid in self.order if self.layers[lid].type in types)

    def tensor_key(self, src: Source) -> str:
        """How runs and reports name an output: "<layer name>:<port id>"."""
        layer = self.layers[src[0]]
        return f"{layer.name}:{layer.outputs[src[1]].id}"

    def infer(self, overrides: Mapping[int, TensorInfo], file: str | None = None) -> dict[Source, TensorInfo]:
        """Inference over the graph again with some layers' (Parameters') outputs replaced by
        `overrides`: a new dict, the view unchanged. Raises the first layer's error."""
        return infer_graph(self.order, self.layers, self._ops, self.sources, overrides, file=file)

    def recheck(self, overrides: Mapping[int, TensorInfo], previous: dict, file: str | None = None) -> None:
        """`infer(overrides, file)` for its errors alone. `previous` holds what the earlier passes
        gave each layer and is updated (`checks.infer.infer_graph`); once it holds a whole pass,
        only the layers a changed output reaches infer again (`checks.infer.reinfer_changed`).
        An empty `previous` starts from compiling's own pass, so that even the first recheck
        leaves alone the Consts and what Consts alone feed (a decoder's shape arithmetic, a
        weight's decompression), whose inputs are those compiling saw."""
        if not previous and self._compiled_pass is not None:
            previous.update(self._compiled_pass)
        if len(previous) < len(self.order):
            infer_graph(self.order, self.layers, self._ops, self.sources, overrides, file=file, previous=previous)
        else:
            reinfer_changed(self._position, self.layers, self._ops, self.sources, self._reader_layers, overrides,
                            previous, file)

    @cached_property
    def _compiled_pass(self) -> Mapping[int, tuple[tuple[TensorInfo, ...], tuple[TensorInfo, ...]]] | None:
        """Compiling's inference as a pass of `infer_graph` records it: per layer of `order`, its
        inputs' and its outputs' `TensorInfo`s (None where a layer lacks one)."""
        found = {}
        infos = self.infos
        for lid in self.order:
            sources = self.sources[lid]
            outputs = tuple((lid, position) for position in range(len(self.layers[lid].outputs)))
            if not all(src in infos for src in sources) or not all(out in infos for out in outputs):
                return None  # (an input no edge reaches)
            found[lid] = (tuple(infos[src] for src in sources), tuple(infos[out] for out in outputs))  # type: ignore[index]
        return MappingProxyType(found)

    @cached_property
    def _position(self) -> Mapping[int, int]:
        return {lid: place for place, lid in enumerate(self.order)}

    @cached_property
    def _reader_layers(self) -> Mapping[int, tuple[int, ...]]:
        """The layers that read any output of a layer, each once."""
        found: dict[int, dict[int, None]] = {}
        for (lid, _), ports in self._readers.items():
            found.setdefault(lid, {}).update((reader, None) for reader, _ in ports)
        return {lid: tuple(readers) for lid, readers in found.items()}

    @cached_property
    def _readers(self) -> Mapping[Source, tuple[tuple[int, int], ...]]:
        found: dict[Source, list[tuple[int, int]]] = {}
        for lid in self.order:
            for position, src in enumerate(self.sources[lid]):
                if src is not None:
                    found.setdefault(src, []).append((lid, position))
        return MappingProxyType({src: tuple(ports) for src, ports in found.items()})

    @cached_property
    def _by_name(self) -> Mapping[str, tuple[int, ...]]:
        found: dict[str, list[int]] = {}
        for lid in self.order:
            found.setdefault(self.layers[lid].name, []).append(lid)
        return MappingProxyType({name: tuple(ids) for name, ids in found.items()})
