"""What every op declares in one place: attributes, inputs, inference and kernel.

An op is a class registered with `@register(type, version)`:

    @register("Convert", 1)
    class Convert(Op):
        class Attrs(OpAttrs):
            destination_type: ElementTypeAttr        # the <data> schema, parsed once
        inputs = ("data",)

        def infer(self, data: TensorInfo) -> TensorInfo:    # shape/type rules, labelled checks
            check(data.etype is not ElementType.string, "no-string-conversion", "...")
            return TensorInfo(self.attrs.destination_type, data.shape)

        def compute(self, data: np.ndarray) -> np.ndarray:  # the numpy kernel
            return convert_array(data, self.src, self.attrs.destination_type)

`infer` and `compute` take one argument per input port and return one value (or a tuple
for several outputs). Attributes are parsed and checked when the model is compiled, so a
kernel call does no parsing at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, NoReturn, TypeVar

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic import ValidationError as PydanticValidationError

from irscatter.errors import ExecutionError, ValidationError, elide
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Body, Layer
from irscatter.ir.shapes import PartialShape, is_plain_number

# --- sub-graph bodies -----------------------------------------------------------------------------
# An op with a <body> needs the interpreter to compile it, and the interpreter sits above the op
# library. So the runtime hands its compilers down when it is imported, and ops only ever call
# `compile_body` (a combiner region of scalars, for the StableHLO-style scatters) or
# `compile_subgraph` (a whole graph run as a function of tensors: If, Loop, TensorIterator).
_BODY_COMPILERS: dict[str, Callable[[Body], Any]] = {}


def set_body_compiler(compiler: Callable[[Body], Any], kind: str = "region") -> None:
    """Called by the runtime: how to turn a layer's `<body>` into something callable."""
    _BODY_COMPILERS[kind] = compiler


def _compile(body: Body, kind: str) -> Any:
    compiler = _BODY_COMPILERS.get(kind)
    if compiler is None:
        raise ValidationError("a <body> can only be compiled with irscatter's runtime loaded (import irscatter)",
                              label="no-runtime")
    return compiler(body)


def compile_body(body: Body) -> Any:
    return _compile(body, "region")


def compile_subgraph(body: Body) -> Any:
    return _compile(body, "subgraph")


# --- attribute value types (the IR writes every attribute as a string) ----------------------


def _ir_bool(value: Any) -> Any:
    if isinstance(value, str):
        t = value.strip().lower()
        if t in ("true", "1"):
            return True
        if t in ("false", "0"):
            return False
        raise ValueError(f'"{value}" is not a boolean (true, false, 1 or 0)')
    return value


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _plain(field: str) -> str:
    """A number's text, refused (ValueError) unless C's parsers would read it as Python does."""
    field = field.strip()
    if not is_plain_number(field):
        raise ValueError(field)
    return field


def _int_list(value: Any) -> Any:
    if isinstance(value, str):
        t = value.strip()
        if t == "":
            return ()
        fields = t.split(",")
        try:
            values = tuple(int(_plain(f)) for f in fields)
        except ValueError:
            raise ValueError(f'"{value}" is not a comma-separated list of integers') from None
        if any(not _INT64_MIN <= v <= _INT64_MAX for v in values):  # OpenVINO reads them as 64-bit integers
            raise ValueError(f'"{value}" holds an integer outside the 64-bit range')
        return values
    return value


def _float_list(value: Any) -> Any:
    if isinstance(value, str):
        t = value.strip()
        if t == "":
            return ()
        try:
            return tuple(float(_plain(f)) for f in t.split(","))
        except ValueError:
            raise ValueError(f'"{value}" is not a comma-separated list of numbers') from None
    return value


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _element_type(value: Any) -> Any:
    return ElementType.from_attribute(value) if isinstance(value, str) else value


IRBool = Annotated[bool, BeforeValidator(_ir_bool)]
IntList = Annotated[tuple[int, ...], BeforeValidator(_int_list)]
FloatList = Annotated[tuple[float, ...], BeforeValidator(_float_list)]
ElementTypeAttr = Annotated[ElementType, BeforeValidator(_element_type)]
Lower = BeforeValidator(_lower)  # for enum attributes: Annotated[Literal[...], Lower]


class OpAttrs(BaseModel):
    """Base of every op's attribute schema. Unknown attributes are ignored, as OpenVINO does.

    A schema's validator is built when its op first parses attributes, not when its module is
    imported: a module declares the schemas of several ops, a model uses few of them, and
    building one costs more than the rest of its class."""

    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)


class NoAttrs(OpAttrs):
    """The schema of ops without attributes."""


# --- inference values -----------------------------------------------------------------------


@dataclass(frozen=True)
class TensorInfo:
    """What inference knows about a tensor: its element type, shape, and value if constant."""

    etype: ElementType
    shape: PartialShape
    value: np.ndarray | None = None

    @classmethod
    def of(cls, array: np.ndarray, etype: ElementType | None = None) -> TensorInfo:
        return cls(etype or ElementType.from_dtype(array.dtype), PartialShape.of(array.shape), array)


def check(condition: Any, label: str, message: str, *, port: str | None = None) -> None:
    """A spec constraint: raises a ValidationError tagged with `label` when it does not hold."""
    if not condition:
        raise ValidationError(message, label=label, port=port)


def fail(label: str, message: str, *, port: str | None = None) -> NoReturn:
    """A spec constraint that does not hold: `check` with a condition already known false, which
    type checkers see never returns."""
    raise ValidationError(message, label=label, port=port)


_Value = TypeVar("_Value")


def required(value: _Value | None, label: str, message: str, *, port: str | None = None) -> _Value:
    """`value`, which a spec constraint requires be known (a merged dimension, a constant input):
    a None raises the labelled error, so the caller holds a value the type checker knows is one."""
    if value is None:
        raise ValidationError(message, label=label, port=port)
    return value


# --- the op base class ----------------------------------------------------------------------

_OWN_OPS = "irscatter.ops."
_PARSED_ATTRS: dict[type[OpAttrs], dict[tuple, OpAttrs]] = {}  # by schema, then raw attributes


class Op:
    type_name: ClassVar[str]
    version: ClassVar[int]
    domain: ClassVar[str]

    Attrs: ClassVar[type[OpAttrs]] = NoAttrs
    attrs: OpAttrs  # the parsed Attrs: each op class that declares Attrs narrows this (attrs: Attrs)
    inputs: ClassVar[tuple[str, ...]] = ()  # input port names, in order
    optional_inputs: ClassVar[int] = 0  # how many trailing inputs may be omitted
    variadic: ClassVar[bool] = False  # takes one or more inputs, all named inputs[0]
    outputs: ClassVar[int] = 1
    foldable: ClassVar[bool] = True  # may inference compute small constant values with it
    # Computes each output element from the same-position elements of its (broadcast) inputs,
    # so running it on vectors equals running it on each scalar (what sub-graph regions need).
    elementwise: ClassVar[bool] = False
    # The input whose buffer `compute(..., inplace=True)` may overwrite with the output. The
    # interpreter passes `inplace=True` only when nothing else can see that buffer any more.
    inplace_input: ClassVar[int | None] = None
    # Inputs the op updates in place, as OpenVINO's plugin does (PagedAttentionExtension writes
    # the step's keys and values into the caches it is given). Fed buffers are never written
    # unless the caller donates them; `compute` then receives `written=` (the input positions
    # it may update) and must update exactly those.
    writes_inputs: ClassVar[tuple[int, ...]] = ()
    # Runs although no Result needs it (Assign writes the model's state), as OpenVINO's sinks do.
    sink: ClassVar[bool] = False
    # Reads nothing but its inputs' shapes: it can neither see nor hold on to their buffers.
    shape_only: ClassVar[bool] = False
    # Its `compute` takes `unused=` (a set of output positions nobody reads) and may return None
    # in those places: MaxPool's indices cost more than its values, and are mostly not wanted.
    skips_unused_outputs: ClassVar[bool] = False
    # The labels of the spec constraints this op checks, with what each means; labels shared
    # by many ops are in irscatter.labels.SHARED. A version inherits its base class's table.
    labels: ClassVar[dict[str, str]] = {}

    def __init__(self, layer: Layer) -> None:
        self.layer = layer
        # Layers of one type mostly share their attributes: each distinct set is parsed once
        # (the schemas are frozen, so one parsed instance can serve every layer).
        # Each schema keeps its own sets: the Consts' (every one has its own offset) would fill
        # a shared table before the first layer of another type came in dependency order.
        parsed = _PARSED_ATTRS.get(self.Attrs)
        if parsed is None:
            parsed = _PARSED_ATTRS[self.Attrs] = {}
        key = tuple(layer.attrs.items())
        attrs = parsed.get(key)
        if attrs is None:
            try:
                attrs = self.Attrs.model_validate(layer.attrs)
            except PydanticValidationError as e:
                raise ValidationError(_describe_attr_errors(e, layer.attrs), label="attributes") from None
            if len(parsed) >= 1024:  # keep the recent ones: a long run of distinct sets passes through
                parsed.clear()
            parsed[key] = attrs
        self.attrs = attrs

    def inference_key(self) -> tuple | None:
        """What this op's inference reads besides its inputs' types and shapes, as the key under
        which layers alike share one inference (checks/infer.py); None shares nothing. irscatter's
        ops read their class and attributes (one parsed object per distinct set); one without
        inputs reads its layer instead, and shares nothing unless it says what it reads. An op
        registered from user code may read anything, so it shares nothing."""
        if not self.inputs or not type(self).__module__.startswith(_OWN_OPS):
            return None
        return (type(self), id(self.attrs))

    def per_shape(self, key: Any, work_out: Callable[[], Any]) -> Any:
        """`work_out()`, remembered under `key` (input shapes) for this layer: a kernel's geometry
        costs as much as a small layer's arithmetic, and a layer sees one shape or a few. At
        most 16 keys are kept; an error is never remembered."""
        known = self.__dict__.setdefault("_per_shape", {})
        if key not in known:
            if len(known) >= 16:
                known.clear()
            known[key] = work_out()
        return known[key]

    def per_constant(self, key: Any, arrays: tuple[np.ndarray, ...], work_out: Callable[[], Any]) -> Any:
        """`work_out()` (a value derived from `arrays` and `key`), kept while the same read-only
        arrays come again: a Const's value is one read-only array, the same object every run,
        so what a kernel derives from it (a divisor, a reshaped filter, resolved axes) need not
        be derived again. Writable arrays may change between runs and are never kept."""
        known = self.__dict__.setdefault("_per_constant", {})
        entry = known.get(key)
        if entry is not None and len(entry[0]) == len(arrays) and all(a is b for a, b in zip(entry[0], arrays)):
            return entry[1]
        value = work_out()
        if not any(a.flags.writeable for a in arrays):
            if len(known) >= 16:
                known.clear()
            known[key] = (arrays, value)
        return value

    @classmethod
    def port(cls, name: str) -> str:
        """How messages name the input declared as `name` ("input 2"), or an attribute of the
        op's schema ("attribute axis"): port names come from the declaration, never retyped."""
        if name in cls.inputs:
            return "input 0" if cls.variadic else f"input {cls.inputs.index(name)}"
        if name in cls.Attrs.model_fields:
            return f"attribute {name}"
        raise KeyError(f"{cls.__name__} declares no input or attribute {name!r}")

    @classmethod
    def constraint_labels(cls) -> dict[str, str]:
        """The op's own labels, its base classes' first (irscatter.labels.SHARED has the rest)."""
        table: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            table.update(klass.__dict__.get("labels", {}))
        return table

    @classmethod
    def label(cls) -> str:
        return f"{cls.type_name}-{cls.version}"

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        if self.variadic:
            check(n_inputs >= 1, "input-count", "takes one or more inputs, the layer has none")
        else:
            lo, hi = len(self.inputs) - self.optional_inputs, len(self.inputs)
            if not lo <= n_inputs <= hi:
                want = str(hi) if lo == hi else f"{lo} to {hi}"
                fail("input-count", f"takes {want} inputs ({', '.join(self.inputs)}), the layer has {n_inputs}")
        if n_outputs != self.outputs:
            fail("output-count",
                 f"has {self.outputs} output{'s' if self.outputs != 1 else ''}, the layer declares {n_outputs}")

    def input_range(self, position: int, infos: Sequence[TensorInfo | None]) -> tuple[int, int] | None:
        """The integers input `position` may hold, (lo, hi) inclusive, given what inference
        knows of the layer's inputs (`infos`, None for an optional input left unconnected): the
        index, length and count inputs an op refuses out of range declare it, so that drawn
        inputs (`--random`) are ones it accepts. None: no bound is known."""
        return None

    # Every op irscatter registers overrides both. A custom op registered from user code without
    # one of them is refused with a clear error rather than a traceback.
    # Each op names its own ports, as many as it declares, and compute takes the keywords its
    # class variables ask for (inplace=, written=, unused=): the base cannot spell those out, so
    # its arguments are Any (which type checkers take as "any signature"), and `check_arity`
    # holds a layer's inputs to the declaration when the model is compiled.
    def infer(self, *inputs: Any) -> TensorInfo | tuple[TensorInfo, ...]:
        raise ValidationError(f"{self.label()} was registered without shape inference (an infer method)",
                              label="no-kernel")

    def compute(self, *inputs: Any, **options: Any) -> np.ndarray | tuple[np.ndarray | None, ...]:
        raise ExecutionError(f"{self.label()} was registered without a kernel (a compute method)",
                             label="no-kernel")


def _describe_attr_errors(e: PydanticValidationError, raw: dict[str, str]) -> str:
    parts = []
    for err in e.errors():
        name = str(err["loc"][0]) if err["loc"] else "?"
        if err["type"] == "missing":
            parts.append(f'required attribute "{name}" is missing')
        else:
            msg = err["msg"].removeprefix("Value error, ")
            parts.append(f'attribute {name}="{elide(raw.get(name, ""))}": {msg}')
    return "; ".join(parts)
