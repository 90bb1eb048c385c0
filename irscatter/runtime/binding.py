"""What a run's arguments name: feeds bound to a compiled model's inputs, the inputs a caller
donates, the values `outputs=` asks for; and, for a model with dynamic inputs, the fed shapes
checked by inference before any kernel runs.

A feed may be keyed by an input's Parameter name, any of its tensor names, its position or
its `InputSpec`; feeds may also come as a list in input order, or as one array for a model of
one input. Every feed is checked and converted as `runtime/feeds.py` says.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo
from irscatter.runtime.feeds import checked_feed, is_openvino_tensor
from irscatter.runtime.graph_view import GraphView
from irscatter.runtime.plan import Plan
from irscatter.runtime.ports import InputSpec, OutputSpec

_SHAPE_CACHE_SIZE = 16


class Binding:
    """The names a compiled model's inputs and recorded values answer to, made once and shared
    by its requests."""

    def __init__(self, plan: Plan, graph: GraphView, file: str | None) -> None:
        self.plan = plan
        self.inputs = plan.inputs
        self.graph = graph
        self.file = file
        self.feed_index = _feed_names(plan.inputs)
        self._keys: dict[str, Any] | None = None  # what `outputs=` accepts (see tensor_keys)

    def input_index(self, key: Any) -> int:
        """The position of the input a feed key names: a name, a position, or an InputSpec."""
        if isinstance(key, str):  # the common case first: a name
            i = self.feed_index.get(key)
            if i is not None:
                return i
        known = ", ".join(f'"{s.name}"' for s in self.inputs) or "none"  # for the messages only
        if isinstance(key, InputSpec):
            key = key.name
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < len(self.inputs):
                raise ExecutionError(f"there is no input {key}: the model has {len(self.inputs)} inputs ({known})",
                                     file=self.file, label="unknown-input")
            return int(key)
        i = self.feed_index.get(key) if isinstance(key, str) else None
        if i is None:
            raise ExecutionError(f'there is no input named "{key}" (the inputs are {known})', file=self.file,
                                 label="unknown-input")
        return i

    def as_mapping(self, feeds: Any) -> Mapping[Any, Any]:
        """Feeds as a mapping: a dict as given, a list or tuple as the inputs in order, a single
        array as the only input."""
        if isinstance(feeds, Mapping):
            return feeds
        if (isinstance(feeds, np.ndarray) or is_openvino_tensor(feeds)) and len(self.inputs) == 1:
            return {0: feeds}
        if isinstance(feeds, (list, tuple)):
            if len(feeds) != len(self.inputs):
                raise ExecutionError(f"{len(feeds)} inputs given in a list, the model has {len(self.inputs)} "
                                     f"({', '.join(s.name for s in self.inputs) or 'none'})",
                                     file=self.file, label="missing-input")
            return dict(enumerate(feeds))
        raise ExecutionError(f"feeds must be a dict (by name, position or input), a list in input order, or one "
                             f"array for a one-input model; got {type(feeds).__name__}", file=self.file,
                             label="unknown-input")

    def bind(self, feeds: Any) -> list[np.ndarray]:
        """The fed arrays in input order, each checked and converted; every input fed once."""
        bound: list[np.ndarray | None] = [None] * len(self.inputs)
        for key, value in self.as_mapping(feeds).items():
            i = self.input_index(key)
            spec = self.inputs[i]
            if bound[i] is not None:
                raise ExecutionError(f'input "{spec.name}" is fed twice (under two of its names)', file=self.file,
                                     label="fed-twice")
            bound[i] = checked_feed(spec, value, self.file)
        for spec, value in zip(self.inputs, bound):
            if value is None:
                raise ExecutionError("no value was fed for this input", file=self.file, layer=spec.layer.ref,
                                     label="missing-input")
        return bound  # type: ignore[return-value]

    def listed(self, given: Any, option: str, label: str) -> list[Any]:
        """What `donate=` or `outputs=` names: one name (a position, an input or output object)
        or an iterable of them."""
        if isinstance(given, (str, int, np.integer, InputSpec, OutputSpec)):
            return [given]
        if isinstance(given, (bytes, bytearray, Mapping)) or not isinstance(given, Iterable):
            raise ExecutionError(f"{option}= takes a name or a list of names, not a {type(given).__name__}",
                                 file=self.file, label=label)
        return list(given)

    def donated(self, names: Any) -> frozenset[int]:
        """The positions of the inputs `donate=` names."""
        out = set()
        for name in self.listed(() if names is None else names, "donate", "unknown-input"):
            try:
                out.add(self.input_index(name))
            except ExecutionError as e:
                raise ExecutionError(f'cannot donate "{name}": {e.message}', file=self.file,
                                     label="unknown-input") from None
        return frozenset(out)

    def selection(self, names: Iterable[str]) -> dict[str, str]:
        """Each requested name with the key its value is recorded under ("<layer>:<port>"):
        an output name, a tensor name of any layer's output port, or "<layer name>:<port id>";
        "tensor:NAME" and "port:LAYER:PORT" name one of the two namespaces outright, and a bare
        name that is a tensor name and the address of another port is refused as ambiguous."""
        keys = self.tensor_keys()
        chosen = {}
        for name in self.listed(names, "outputs", "unknown-output"):
            name = name.name if isinstance(name, OutputSpec) else name
            key = keys.get(name) if isinstance(name, str) else None
            if key is None:
                raise ExecutionError(f'outputs=: no tensor is named "{name}" (give an output name, a tensor name '
                                     f'or "<layer name>:<port id>")', file=self.file, label="unknown-output")
            if isinstance(key, tuple):
                raise ExecutionError(f'outputs=: "{name}" is both the name of tensor {key[0]} and the address of port '
                                     f'{key[1]}: say "tensor:{name}" or "port:{name}"', file=self.file,
                                     label="unknown-output")
            chosen[name] = key
        return chosen

    def tensor_keys(self) -> dict[str, Any]:
        """Every name `outputs=` accepts, with the key its value is recorded under (made once);
        an ambiguous bare name maps to the pair of keys it could mean."""
        if self._keys is None:
            ports: dict[str, str] = {}
            tensors: dict[str, str] = {}
            key_of_slot: dict[int, str] = {}
            for (lid, pos), slot in self.plan.slot_of.items():
                key = key_of_slot[slot] = self.graph.tensor_key((lid, pos))
                ports.setdefault(key, key)
                for tensor in self.graph.layers[lid].outputs[pos].names:
                    tensors.setdefault(tensor, key)
            for spec, slot in zip(self.plan.outputs, self.plan.output_slots):
                tensors.setdefault(spec.name, key_of_slot[slot])
            keys: dict[str, Any] = {**ports, **{f"port:{k}": v for k, v in ports.items()},
                                    **{f"tensor:{k}": v for k, v in tensors.items()}}
            for name, key in tensors.items():
                other = ports.get(name)
                keys[name] = key if other is None or other == key else (key, other)
            self._keys = keys
        return self._keys

    def ambiguous_names(self) -> frozenset[str]:
        """The tensor names that are also the address of another port ("<layer>:<port id>")."""
        return frozenset(name for name, key in self.tensor_keys().items() if isinstance(key, tuple))


def _feed_names(inputs: list[InputSpec]) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, spec in enumerate(inputs):
        for name in (spec.name, *spec.names):
            index.setdefault(name, i)
    return index


class ShapeChecks:
    """For a model with dynamic inputs: inference again on each new combination of fed shapes
    and element types, so that a shape error names its layer before any kernel runs. The last
    few combinations seen are remembered; each request has a memory of its own (`fresh`)."""

    def __init__(self, inputs: list[InputSpec], graph: GraphView, file: str | None) -> None:
        self.inputs, self.graph, self.file = inputs, graph, file
        self._seen: OrderedDict[tuple, None] = OrderedDict()
        self._last: dict = {}  # each layer's inputs and outputs in the last pass (only the changed infer again)

    def fresh(self) -> ShapeChecks:
        return ShapeChecks(self.inputs, self.graph, self.file)

    def check(self, bound: list[np.ndarray]) -> None:
        key = tuple((a.shape, a.dtype.str) for a in bound)
        if key in self._seen:
            self._seen.move_to_end(key)
            return
        overrides = {
            spec.layer.id: TensorInfo(spec.etype if spec.etype is not ElementType.dynamic else ElementType.from_dtype(a.dtype),
                                      PartialShape.of(a.shape))
            for spec, a in zip(self.inputs, bound)
        }
        self.graph.recheck(overrides, self._last, file=self.file)
        self._seen[key] = None
        if len(self._seen) > _SHAPE_CACHE_SIZE:
            self._seen.popitem(last=False)
