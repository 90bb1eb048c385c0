"""The typed graph: `Model` of `Layer`s with `Port`s, joined by `Edge`s.

The graph mirrors the IR file closely and keeps everything needed to write it back:
attributes stay the raw `<data>` strings (each op parses them with its own schema when the
model is prepared), port ids stay ids (edges name ports by id, not by position), and XML
order is kept. Weights never enter the pydantic fields: a Const's bytes are a private,
memory-mapped view, so `model_dump_json()` describes the graph without its tensors.

`Model`, `Graph` and `Body` are pydantic models; the records a model has thousands of
(`Layer`, `Port`, `Edge`) are pydantic dataclasses with slots: validated the same way when
built by hand, a fifth of the memory (a model instance keeps its fields in a dict of its own)
and faster to read. The loader builds both kinds from values it has checked, without
validating them again (`trusted` and the `new_*` constructors).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
from collections.abc import Iterator
from typing import Annotated, Any, NamedTuple, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.dataclasses import rebuild_dataclass

from irscatter.errors import LayerRef
from irscatter.ir.element_types import ElementType
from irscatter.ir.opsets import version_text
from irscatter.ir.shapes import PartialShape

RtInfo = dict[str, Any]
_M = TypeVar("_M", bound=BaseModel)


def trusted(cls: type[_M], **fields: Any) -> _M:
    """An instance of a pydantic model built from values the loader has already checked.

    What `model_construct` does, minus its per-call bookkeeping: an IR of 20000 layers
    builds some 100000 of these, and that bookkeeping was a third of the load time. Fields
    not given take their defaults; private attributes start at theirs."""
    n_fields, all_fields, private = _FACTS.get(cls) or _class_facts(cls)
    obj = _new(cls)
    if len(fields) < n_fields:
        given = fields
        fields = {name: info.get_default(call_default_factory=True) for name, info in cls.__pydantic_fields__.items()
                  if name not in given}
        fields.update(given)
        set_fields = set(given)
    else:
        # Every field is set: one set per class serves all instances (a set costs more than
        # the values here, and adding a name already in it, as pydantic does, changes nothing).
        set_fields = all_fields
    _set(obj, "__dict__", fields)
    _set(obj, "__pydantic_fields_set__", set_fields)
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", dict(private) if private else None)
    return obj


class _ClassFacts(NamedTuple):
    """What `trusted` needs to know of a class, looked up once."""

    n_fields: int
    all_fields: set[str]  # shared by every instance with all fields set
    private: dict[str, Any]  # private attributes' defaults (immutable ones only, so shallow copies do)


def _class_facts(cls: type[BaseModel]) -> _ClassFacts:
    facts = _ClassFacts(len(cls.__pydantic_fields__), set(cls.__pydantic_fields__),
                        {k: v.get_default() for k, v in cls.__private_attributes__.items()})
    _FACTS[cls] = facts
    return facts


_FACTS: dict[type, _ClassFacts] = {}
_new = object.__new__
_set = object.__setattr__


def new_layer(id: int, name: str, type: str, version: str, attrs: dict[str, str], extra: dict[str, str],  # noqa: A002
              inputs: list[Port], outputs: list[Port], rt_info: RtInfo, bodies: dict[str, Body], line: int | None
              ) -> Layer:
    """A layer of values the loader has checked, built without validating them again (the
    loader makes one a layer; the `new_*` constructors are `trusted` for the dataclasses)."""
    layer = _new(Layer)
    layer.id, layer.name, layer.type, layer.version, layer.attrs, layer.extra = id, name, type, version, attrs, extra
    layer.inputs, layer.outputs, layer.rt_info, layer.bodies, layer.line = inputs, outputs, rt_info, bodies, line
    layer._const = None
    return layer


def new_port(id: int, precision: ElementType | None, names: tuple[str, ...], shape: PartialShape,  # noqa: A002
             rt_info: RtInfo) -> Port:
    """A port of checked values (see `new_layer`)."""
    port = _new(Port)
    _PORT_ID(port, id)
    _PORT_PRECISION(port, precision)
    _PORT_NAMES(port, names)
    _PORT_SHAPE(port, shape)
    _PORT_RT_INFO(port, rt_info)
    return port


def new_edge(from_layer: int, from_port: int, to_layer: int, to_port: int) -> Edge:
    """An edge of checked values (see `new_layer`)."""
    edge = _new(Edge)
    _FROM_LAYER(edge, from_layer)
    _FROM_PORT(edge, from_port)
    _TO_LAYER(edge, to_layer)
    _TO_PORT(edge, to_port)
    return edge


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Hold the cyclic garbage collector while a large graph is built: each of its passes
    walks every object built so far, and loading 20000 layers set off hundreds of them.
    The objects built are freed by reference counting as usual.

    On the way out, what was built is moved to the oldest generation without a pass
    (`freeze` then `unfreeze`, each a constant-time splice of lists): otherwise the first
    collection after loading walks all of it at once as young objects, 75 ms for 20000 layers,
    and again when they move up. Young objects of the caller's move up with them; any cycle
    among those is collected by the next full collection instead of an earlier one."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def split_names(text: str) -> tuple[str, ...]:
    """Port `names`: comma-separated, a literal comma in a name is escaped as `\\,`."""
    out: list[str] = []
    pending = ""
    for piece in text.split(","):
        if piece.endswith("\\"):
            pending += piece[:-1] + ","
            continue
        name = (pending + piece).strip()
        pending = ""
        if name:
            out.append(name)
    if pending.strip():
        out.append(pending.strip())
    return tuple(out)


def output_name(result: Layer, feeding_port: Port | None) -> str:
    """The key of a model output: the Result's `output_names`, else the first tensor name of
    the port feeding it, else the Result's layer name."""
    explicit = split_names(result.extra.get("output_names") or result.attrs.get("output_names") or "")
    if explicit:
        return explicit[0]
    if feeding_port is not None and feeding_port.names:
        return feeding_port.names[0]
    return result.name


@pydantic_dataclass(frozen=True, slots=True)
class Port:
    """An input or output port: its id, declared precision, tensor names and dims."""

    id: int
    precision: ElementType | None = None
    names: tuple[str, ...] = ()
    shape: PartialShape = Field(default_factory=PartialShape)
    rt_info: RtInfo = Field(default_factory=dict)


@pydantic_dataclass(frozen=True, slots=True)
class Edge:
    from_layer: int
    from_port: int
    to_layer: int
    to_port: int


class PortMapEntry(BaseModel):
    """One `<port_map>` line of a sub-graph layer (TensorIterator, Loop, If)."""

    model_config = ConfigDict(frozen=True)

    external_port_id: int
    internal_layer_id: int
    axis: int | None = None
    start: int | None = None
    end: int | None = None
    stride: int | None = None
    part_size: int | None = None
    purpose: str | None = None


@pydantic_dataclass(frozen=True, slots=True)
class BackEdge:
    from_layer: int
    to_layer: int


class Body(BaseModel):
    """A nested graph with the port map that ties it to its owning layer."""

    graph: Graph
    inputs: list[PortMapEntry] = Field(default_factory=list)
    outputs: list[PortMapEntry] = Field(default_factory=list)
    back_edges: list[BackEdge] = Field(default_factory=list)

    def as_model(self, layers: list[Layer] | None = None, name: str = "body") -> Model:
        """The body as a model of its own (its layers, or `layers` in their place), for compiling
        or checking it like one."""
        return Model.model_construct(layers=self.graph.layers if layers is None else layers, edges=self.graph.edges,
                                     name=name, ir_version=11, rt_info={}, xml_path=None, bin_path=None, bin_size=None)


@pydantic_dataclass(slots=True)
class Layer:
    id: int
    name: str
    type: str
    version: str
    attrs: dict[str, str] = Field(default_factory=dict)
    extra: dict[str, str] = Field(default_factory=dict)  # other attributes of <layer> itself
    inputs: list[Port] = Field(default_factory=list)
    outputs: list[Port] = Field(default_factory=list)
    rt_info: RtInfo = Field(default_factory=dict)
    bodies: dict[str, Body] = Field(default_factory=dict)
    line: int | None = None  # source line of <layer>, for messages
    # ConstData for Const layers with weights: not a part of the graph's description
    _const: Annotated[Any, Field(exclude=True)] = dataclasses.field(default=None, init=False, repr=False,
                                                                    compare=False)

    @property
    def ref(self) -> LayerRef:
        return LayerRef(self.id, self.name, self.type, version_text(self.type, self.version))

    def input_position(self, port_id: int) -> int | None:
        inputs = self.inputs
        if 0 <= port_id < len(inputs) and inputs[port_id].id == port_id:
            return port_id  # (the writers number a layer's inputs 0, 1, ... and its outputs on)
        for i, p in enumerate(inputs):
            if p.id == port_id:
                return i
        return None

    def output_position(self, port_id: int) -> int | None:
        outputs, guess = self.outputs, port_id - len(self.inputs)
        if 0 <= guess < len(outputs) and outputs[guess].id == port_id:
            return guess
        for i, p in enumerate(outputs):
            if p.id == port_id:
                return i
        return None

    @property
    def const_data(self) -> Any:
        """The `ConstData` of a Const layer with weights (None otherwise): what `_const` holds,
        read through here everywhere but where the loader sets it."""
        return self._const

    def copy_with(self, **changes: Any) -> Layer:
        """A shallow copy (the same attribute dicts and port lists) with `changes` made, its
        constant data kept."""
        twin = copy.copy(self)
        for name, value in changes.items():
            setattr(twin, name, value)
        return twin

    @property
    def const_value(self) -> np.ndarray:
        """The decoded value of a Const layer (decoded once, on first use)."""
        if self.const_data is None:
            raise ValueError(f"{self.ref} carries no constant data")
        return self.const_data.value()


class Graph(BaseModel):
    layers: list[Layer] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)

    def layer(self, layer_id: int) -> Layer:
        for layer in self.layers:
            if layer.id == layer_id:
                return layer
        raise KeyError(layer_id)

    def layers_of_type(self, type_name: str) -> list[Layer]:
        return [layer for layer in self.layers if layer.type == type_name]

    @property
    def parameters(self) -> list[Layer]:
        return self.layers_of_type("Parameter")

    @property
    def results(self) -> list[Layer]:
        return self.layers_of_type("Result")


class Model(Graph):
    """A loaded IR model: the graph as written. Running it is the runtime's business
    (`irscatter.compile_model`, or the `run()` of the models `irscatter.read_model` returns)."""

    name: str = ""
    ir_version: int = 11
    rt_info: RtInfo = Field(default_factory=dict)
    xml_path: str | None = None
    bin_path: str | None = None
    bin_size: int | None = None

    _weights: Any = PrivateAttr(default=None)  # the weights file (`ir.files.WeightsFile`): keeps its memory map alive

    @property
    def source(self) -> str:
        return self.xml_path or "<memory>"

    @property
    def inputs(self) -> list[Layer]:
        return self.parameters

    @property
    def outputs(self) -> list[Layer]:
        return self.results


Body.model_rebuild()


def _slot_setter(cls: type, name: str) -> Any:
    """The setter of a frozen dataclass's slot (what `object.__setattr__` calls, without its
    lookup of the name on every call)."""
    return cls.__dict__[name].__set__


_PORT_ID, _PORT_PRECISION, _PORT_NAMES, _PORT_SHAPE, _PORT_RT_INFO = (
    _slot_setter(Port, name) for name in ("id", "precision", "names", "shape", "rt_info"))
_FROM_LAYER, _FROM_PORT, _TO_LAYER, _TO_PORT = (
    _slot_setter(Edge, name) for name in ("from_layer", "from_port", "to_layer", "to_port"))
rebuild_dataclass(Layer)  # type: ignore[arg-type]  # (mypy sees the class undecorated, not a PydanticDataclass)
