"""A compiled model's inputs and outputs, described the way OpenVINO's Python API and numpy take
them.

`InputSpec` and `OutputSpec` answer to irscatter's names (`name`, `names`, `etype`, `shape`) and
to OpenVINO's (`get_any_name()`, `get_names()`, `get_partial_shape()`, `get_shape()`,
`get_element_type()`, `partial_shape`, `element_type`), so code written against an
`ov.CompiledModel`'s ports runs unchanged. Their shape and element type also go straight to numpy:
`np.zeros(port.shape, port.element_type)` makes a feed for a static input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from irscatter.errors import UsageError
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer
from irscatter.ir.shapes import PartialShape


class PortType:
    """A port's element type as a user holds it: equal to its `ElementType` (and to its text,
    "f32"), printed as that text, and a dtype to numpy (`np.dtype(port.element_type)` is the
    dtype irscatter holds its values in). `ElementType` itself is a `str`, which numpy would
    read as a type name of its own and refuse."""

    __slots__ = ("etype",)

    def __init__(self, etype: ElementType) -> None:
        self.etype = etype

    @property
    def dtype(self) -> np.dtype:
        return self.etype.dtype

    def to_dtype(self) -> np.dtype:
        """OpenVINO's spelling of `dtype`."""
        return self.etype.dtype

    def get_type_name(self) -> str:
        return self.etype.value

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PortType):
            return self.etype == other.etype
        return self.etype == other

    def __hash__(self) -> int:
        return hash(self.etype)

    def __str__(self) -> str:
        return self.etype.value

    def __repr__(self) -> str:
        return f"<Type: {self.etype.value}>"

    def __getattr__(self, name: str) -> Any:  # the rest of ElementType: bitwidth, is_float, ...
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.etype, name)


class _Port:
    """What inputs and outputs share: OpenVINO's accessors over `name`, `names`, `etype`, `shape`."""

    name: str
    names: tuple[str, ...]
    etype: ElementType
    shape: PartialShape

    @property
    def element_type(self) -> PortType:
        return PortType(self.etype)

    def get_element_type(self) -> PortType:
        return PortType(self.etype)

    @property
    def any_name(self) -> str:
        """A tensor name of the port (the first), or the layer's name when it has none."""
        return self.names[0] if self.names else self.name

    def get_any_name(self) -> str:
        return self.any_name

    def get_names(self) -> set[str]:
        """Every tensor name of the port (OpenVINO gives them as a set)."""
        return set(self.names) or {self.name}

    @property
    def partial_shape(self) -> PartialShape:
        return self.shape

    def get_partial_shape(self) -> PartialShape:
        return self.shape

    def get_shape(self) -> tuple[int, ...]:
        """The static shape as ints; a usage error for a dynamic one, as OpenVINO refuses."""
        if not self.shape.is_static:
            raise UsageError(f'{self.kind} "{self.name}" has the dynamic shape {self.shape}: its shape is known '
                             f"only once it is fed (get_partial_shape() gives its bounds)")
        return self.shape.to_tuple()

    kind = "port"

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name!r}: {self.etype} {self.shape}>"


@dataclass(frozen=True, eq=False, repr=False)  # compared and hashed by identity: a dict of feeds may key by it
class InputSpec(_Port):
    """A model input as `run()` expects it: its name, every tensor name it answers to, its
    element type and (partial) shape after inference, and its Parameter layer."""

    name: str
    names: tuple[str, ...]
    etype: ElementType
    shape: PartialShape
    layer: Layer
    kind = "input"


@dataclass(frozen=True, eq=False, repr=False)
class OutputSpec(_Port):
    """A model output: the key `run()` returns it under, the tensor names of the port that
    feeds its Result, its element type and (partial) shape, and its Result layer."""

    name: str
    etype: ElementType
    shape: PartialShape
    layer: Layer
    names: tuple[str, ...] = ()
    kind = "output"
