"""Precision emulation: a run as a device computing in f16 or bf16 would make it.

A device told to infer in a lower precision (a GPU in f16, a CPU with bf16 or f16 units) stores
the float tensors between its layers in that precision while each kernel computes in f32. To
first order that is what this module reproduces: after a layer runs, each of its f32 outputs is
rounded to the lower precision (round to nearest even; in f16 a magnitude beyond 65504 becomes
inf) and stored back as f32, so the next kernel computes in f32 on rounded inputs. Fed inputs are
rounded as the device converts them, a Const's value once. Integer, boolean and other element
types are never touched, nor are float types other than f32 (the device converts f32 only).

Some layers stay in f32 on the device, and so they do here. Which ones is decided once per
compiled model by `kept_in_f32`, after OpenVINO's own rules:

* f16 follows the common f16 compression of OpenVINO's transformations library: an Exp whose
  values flow into a ReduceSum or ReduceMean (softmax and its kin); a division by, or a negative
  power of, `Maximum|Add(x, eps)` (optionally under a Sqrt) whose eps is below f16's smallest
  normal number; a float Range and what its values flow through; each of these spread down and
  then up through the element-wise, reduction, normalization and data-movement layers around it,
  stopping at anything else (a MatMul, a Convolution).
* bf16 follows the CPU plugin's rule for bf16: the tail of the graph, from each Result back to
  the nearest Convolution, MatMul, recurrent cell or sequence, ROIPooling or Interpolate, stays
  in f32; those heavy layers compute in bf16. A convolution's fused bias and activation (below)
  belong to its bf16 kernel; after a MatMul the tail starts at the MatMul.
* In both, the layers that compute a shape (what feeds a Reshape's target shape, an
  Interpolate's sizes or scales, and the like, up to a ShapeOf) stay in f32.
* In both, a layer whose `<rt_info>` asks for f32 (`keeps_f32`, the mark OpenVINO's CPU plugin keeps
  a node's own precision for) stays in f32, that layer alone, reading its Consts whole.

A Convolution or MatMul and the activations, Const biases and scales right after it (each the
only reader of the one before) run as one kernel on the device, adding to the f32 accumulator:
only the last of them is rounded (the CPU plugin's fusing of simple layers into convolutions and
fully connected layers).

A value crosses between an f32 layer and a rounded one the way the device converts it: a
rounded layer reading a kept layer's output reads it rounded (a copy; the kept readers still see
it whole), and in f16 the model's outputs are rounded too. In bf16 a Const read by anything but a
heavy layer, a Concat or a convolution's fused post-op stays f32, as the CPU keeps an
element-wise layer's constant operand.

The emulated precision is the run context's `precision` (`ops/context.py`), so the bodies of If, Loop and TensorIterator (and
the scalar regions of scatter combiners) that run during an emulated run are rounded as well.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

import ml_dtypes
import numpy as np

from irscatter.errors import UsageError
from irscatter.ir.element_types import ElementType
from irscatter.ir.topology import Source
from irscatter.ops import context
from irscatter.runtime.graph_view import GraphView
from irscatter.runtime.plan import Plan


class Compiled(Protocol):
    """What rounding reads of a compiled model (`runtime.interpreter.CompiledModel`, which imports
    this module): its graph and its plan."""

    plan: Plan

    @property
    def graph(self) -> GraphView: ...

PRECISIONS = ("f16", "bf16")
_STORAGE = {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16)}
_ROUNDED_TYPE = np.dtype(np.float32)  # the element type a device converts to its inference precision

# --- the op groups the rules name --------------------------------------------------------------

# OpenVINO's element-wise arithmetic base classes (unary and binary), through which a mark spreads.
_UNARY_ARITHMETIC = frozenset({
    "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceiling", "Cos", "Cosh", "Erf", "Exp",
    "Floor", "Gelu", "GRN", "HSigmoid", "HSwish", "Log", "Log1p", "Mish", "Negative", "Relu", "Round",
    "Sigmoid", "Sign", "Sin", "Sinh", "SoftPlus", "Sqrt", "Tan", "Tanh"})
_BINARY_ARITHMETIC = frozenset({
    "Add", "Subtract", "Multiply", "Divide", "Maximum", "Minimum", "Power", "SquaredDifference",
    "FloorMod", "Mod"})
# Layers an f32 mark spreads through, down to readers and up to producers, in f16.
_SPREADS_F32 = _UNARY_ARITHMETIC | _BINARY_ARITHMETIC | frozenset({
    "Squeeze", "Unsqueeze", "Reshape", "Broadcast", "MVN", "NormalizeL2", "StridedSlice", "ReduceSum",
    "ReduceMean", "Slice", "VariadicSplit", "Split", "Concat", "Convert", "Const", "Tile"})
_REDUCTIONS_OF_EXP = frozenset({"ReduceSum", "ReduceMean"})
# What a float Range's mark flows down through.
_RANGE_PATH = frozenset({"Convert", "Greater", "GreaterEqual", "Less", "LessEqual", "Reshape", "Range",
                         "Squeeze", "Unsqueeze"})
_F16_SMALLEST_NORMAL = float(np.finfo(np.float16).tiny)

# The layers the CPU computes in bf16 however close to the outputs they are; the tail behind
# them stays f32.
_HEAVY_IN_BF16 = frozenset({
    "Convolution", "GroupConvolution", "MatMul", "RNNCell", "GRUCell", "LSTMCell", "AUGRUCell",
    "RNNSequence", "GRUSequence", "LSTMSequence", "AUGRUSequence", "ROIPooling", "Interpolate"})

# Inputs that are shapes, sizes or counts: what computes them computes a shape, and stays f32.
_SHAPE_INPUTS: Mapping[str, tuple[int, ...]] = {
    "Reshape": (1,), "Tile": (1,), "Interpolate": (1, 2, 3), "OneHot": (1,), "BatchToSpace": (1, 2, 3),
    "ConvolutionBackpropData": (2,), "GroupConvolutionBackpropData": (2,)}

# Layers whose every output element is one of their input elements: when the inputs are
# rounded, so are the outputs, and rounding them again would only cost a copy.
_MOVES_VALUES = frozenset({
    "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "VariadicSplit", "Gather",
    "GatherElements", "GatherND", "StridedSlice", "Slice", "Broadcast", "Tile", "Identity", "Reverse",
    "Roll", "DepthToSpace", "SpaceToDepth", "ShuffleChannels", "MaxPool", "ReduceMax", "ReduceMin", "Relu"})

# A Convolution or a MatMul and the simple layers after it run as one kernel on the device: an
# activation, or a bias or scale from a Const, is applied to the f32 accumulator before the result
# is stored, so nothing between them is rounded.
_TAKES_POST_OPS = frozenset({"Convolution", "GroupConvolution", "ConvolutionBackpropData",
                             "GroupConvolutionBackpropData", "MatMul"})
_ACTIVATIONS = frozenset({"Relu", "Elu", "Sigmoid", "Clamp", "Tanh", "Swish", "HSwish", "HSigmoid", "Mish", "Gelu",
                          "SoftPlus", "Abs", "Sqrt", "Exp", "Round", "PRelu"})
_CONST_OPERAND_OPS = frozenset({"Add", "Subtract", "Multiply"})


# --- choosing the precision ----------------------------------------------------------------------

_NOT_EMULATING: AbstractContextManager[object] = nullcontext()


def checked_precision(precision: str | None) -> str | None:
    """`precision` if it names an emulated precision (or is None); a UsageError otherwise."""
    if precision is None or precision in PRECISIONS:
        return precision
    raise UsageError(f"precision must be one of {', '.join(PRECISIONS)} (or None for plain f32), got {precision!r}",
                     argument="precision", value=precision)


def emulating(precision: str | None) -> AbstractContextManager[object]:
    """Runs inside the block round as a device inferring in `precision` would; with None, the
    block is left as it is (a run inside an outer emulation stays emulated)."""
    if checked_precision(precision) is None:
        return _NOT_EMULATING
    return context.using(precision=precision)


def emulated_precision() -> str | None:
    """The precision the run in progress emulates, if any."""
    return context.current().precision


# --- rounding ----------------------------------------------------------------------------------


def rounded(array: np.ndarray, precision: str) -> np.ndarray:
    """A new f32 array holding `array` rounded to `precision` (nearest even; f16 overflows to inf)."""
    with np.errstate(over="ignore"):
        return array.astype(_STORAGE[precision]).astype(array.dtype)


def round_in_place(array: np.ndarray, precision: str) -> None:
    """Round a writable f32 array to `precision` where it lies."""
    with np.errstate(over="ignore"):
        np.copyto(array, array.astype(_STORAGE[precision]), casting="unsafe")


def _roundable(value: object) -> TypeGuard[np.ndarray]:
    return isinstance(value, np.ndarray) and value.dtype == _ROUNDED_TYPE


# --- which layers stay in f32 --------------------------------------------------------------------


def _is_float(graph: GraphView, source: Source) -> bool:
    info = graph.infos.get(source)
    return info is None or info.etype.is_float or info.etype is ElementType.dynamic


def _readers(graph: GraphView) -> dict[int, list[tuple[int, Source]]]:
    """Per layer, who reads its outputs: (reader id, the output read), once per input port."""
    return {lid: [(reader, src) for src in graph.outputs_of(lid) for reader, _ in graph.readers(src)]
            for lid in graph.order}


def kept_in_f32(graph: GraphView, precision: str) -> frozenset[int]:
    """The ids of the layers that compute and store in f32 when the model runs in `precision`."""
    checked_precision(precision)
    readers = _readers(graph)
    kept = _shape_computations(graph) | _float_range_paths(graph, readers)
    if precision == "f16":
        kept |= _divisions_by_eps(graph) | _exps_into_reductions(graph, readers)
        kept = _spread_up(graph, readers, _spread_down(graph, kept))
    else:
        kept |= _graph_tail(graph, _convolution_kernels(graph))
    kept |= {lid for lid in graph.order if keeps_f32(graph.layers[lid].rt_info)}
    return frozenset(kept)


# What irscatter writes in a layer's <rt_info> to keep it in f32 (OpenVINO's DisableFP16Compression).
F32_MARK: dict[str, dict[str, str]] = {"precise": {"version": "0"}}


def keeps_f32(rt_info: Mapping[str, Any]) -> bool:
    """Whether rt_info asks OpenVINO to keep a layer in its own precision: `precise` version 0, or
    `DisablePrecisionConversion` version 0 disabling conversion from any type (`dynamic`) to f16 or
    to any type (value `FROM:TO,...;...`), the test the CPU plugin makes for f16 and bf16 alike."""
    precise, entry = rt_info.get("precise"), rt_info.get("DisablePrecisionConversion")
    if isinstance(precise, Mapping) and precise.get("version") == "0":
        return True
    if not isinstance(entry, Mapping) or entry.get("version") != "0":
        return False
    pairs = (part.partition(":") for part in str(entry.get("value", "")).split(";"))
    return any(source.strip() == "dynamic" and {t.strip() for t in targets.split(",")} & {"f16", "dynamic"}
               for source, _, targets in pairs)


def _shape_computations(graph: GraphView) -> set[int]:
    """Everything that computes a shape input, up to (and with) the ShapeOf it starts from."""
    marked: set[int] = set()
    for lid in graph.order:
        positions = _SHAPE_INPUTS.get(graph.type_of(lid), ())
        sources = graph.sources.get(lid, ())
        read = [sources[p] for p in positions if p < len(sources)]
        stack = [source[0] for source in read if source is not None]
        while stack:
            producer = stack.pop()
            if producer in marked:
                continue
            marked.add(producer)
            if graph.type_of(producer) not in ("ShapeOf",):
                stack.extend(s[0] for s in graph.inputs_of(producer))
    return marked


def _float_range_paths(graph: GraphView, readers: Mapping[int, list[tuple[int, Source]]]) -> set[int]:
    """A Range that makes floats, its producers, and the converts, comparisons and reshapes its
    values flow down through: float positions are exact only in f32."""
    marked: set[int] = set()
    on_path: set[int] = set()
    for lid in graph.order:
        kind = graph.type_of(lid)
        if kind == "Range" and _is_float(graph, (lid, 0)):
            on_path.add(lid)
            marked.add(lid)
            marked.update(s[0] for s in graph.inputs_of(lid))
        elif kind in _RANGE_PATH and any(s[0] in on_path for s in graph.inputs_of(lid)):
            on_path.add(lid)
            marked.add(lid)
    return marked


def _const_values(graph: GraphView, source: Source | None) -> np.ndarray | None:
    """The values behind an input when it is a Const, directly or through a Convert."""
    if source is None:
        return None
    lid = source[0]
    if graph.type_of(lid) == "Convert":
        inner = graph.inputs_of(lid)
        if not inner:
            return None
        lid = inner[0][0]
    if graph.type_of(lid) != "Const":
        return None
    try:
        return np.asarray(graph.layers[lid].const_value, dtype=np.float64)
    except (ValueError, TypeError):
        return None


def _eps_guard(graph: GraphView, source: Source | None) -> bool:
    """Whether `source` is `Maximum(x, eps)` or `Add(x, eps)` with every eps below f16's smallest
    normal number: a guard against dividing by zero that f16 would flush to nothing."""
    if source is None or graph.type_of(source[0]) not in ("Maximum", "Add"):
        return False
    operands = list(graph.sources.get(source[0], ()))
    for eps in operands:
        values = _const_values(graph, eps)
        if values is not None and values.size and bool(np.all(values <= _F16_SMALLEST_NORMAL)):
            return True
    return False


def _divisions_by_eps(graph: GraphView) -> set[int]:
    """`x / guard`, `x / Sqrt(guard)` and `x * Power(guard, negative)`, guard as in `_eps_guard`."""
    marked: set[int] = set()
    for lid in graph.order:
        kind = graph.type_of(lid)
        sources = list(graph.sources.get(lid, ()))
        if kind == "Divide" and len(sources) == 2:
            divisor = sources[1]
            if divisor is not None and graph.type_of(divisor[0]) == "Sqrt":
                under = graph.inputs_of(divisor[0])
                divisor = under[0] if under else None
            if _eps_guard(graph, divisor):
                marked.add(lid)
        elif kind == "Multiply" and len(sources) == 2:
            if any(_negative_power_of_guard(graph, s) for s in sources):
                marked.add(lid)
    return marked


def _negative_power_of_guard(graph: GraphView, source: Source | None) -> bool:
    if source is None or graph.type_of(source[0]) != "Power":
        return False
    base, exponent = (list(graph.sources.get(source[0], ())) + [None, None])[:2]
    values = _const_values(graph, exponent)
    return values is not None and bool(np.all(values < 0)) and _eps_guard(graph, base)


def _exps_into_reductions(graph: GraphView, readers: Mapping[int, list[tuple[int, Source]]]) -> set[int]:
    """Each Exp whose values reach a ReduceSum or ReduceMean through layers a mark spreads
    through: large exponentials summed overflow f16."""
    toward_reduction: set[int] = set()
    for lid in reversed(graph.order):
        kind = graph.type_of(lid)
        if kind in _REDUCTIONS_OF_EXP:
            toward_reduction.add(lid)
        elif kind in _SPREADS_F32 and any(r in toward_reduction and _is_float(graph, s) for r, s in readers.get(lid, ())):
            toward_reduction.add(lid)
    return {lid for lid in toward_reduction if graph.type_of(lid) == "Exp"}


def _spread_down(graph: GraphView, kept: set[int]) -> set[int]:
    """Readers of kept values that a mark spreads through are kept too (a Convert stops it)."""
    kept = set(kept)
    for lid in graph.order:
        kind = graph.type_of(lid)
        if lid in kept or kind not in _SPREADS_F32 or kind == "Convert":
            continue
        if any(s[0] in kept and _is_float(graph, s) for s in graph.inputs_of(lid)):
            kept.add(lid)
    return kept


def _spread_up(graph: GraphView, readers: Mapping[int, list[tuple[int, Source]]], kept: set[int]) -> set[int]:
    """Producers of a kept layer's other operands are kept too (a Concat's other inputs, an
    Add's other side, its Consts), through the layers a mark spreads through; a Convert only
    when it converts a Const."""
    kept = set(kept)
    for lid in reversed(graph.order):
        kind = graph.type_of(lid)
        if lid in kept or kind not in _SPREADS_F32:
            continue
        if not any(r in kept and _is_float(graph, s) for r, s in readers.get(lid, ())):
            continue
        if kind == "Convert" and not any(graph.type_of(s[0]) == "Const" for s in graph.inputs_of(lid)):
            continue
        kept.add(lid)
    return kept


def fused_post_ops(graph: GraphView) -> dict[int, int]:
    """Each layer whose output goes straight into the next layer of one fused kernel, with that
    layer: a Convolution or MatMul, then each activation or Const bias or scale after it, as long
    as it has that one reader."""
    readers = _readers(graph)
    fused: dict[int, int] = {}
    for lid in graph.order:
        if graph.type_of(lid) not in _TAKES_POST_OPS:
            continue
        link = lid
        while len(readers.get(link, ())) == 1:
            reader = readers[link][0][0]
            if not _is_post_op(graph, reader, link):
                break
            fused[link] = reader
            link = reader
    return fused


def _is_post_op(graph: GraphView, lid: int, producer: int) -> bool:
    kind = graph.type_of(lid)
    if kind in _ACTIVATIONS:
        return graph.inputs_of(lid)[0][0] == producer
    if kind in _CONST_OPERAND_OPS:
        others = [s for s in graph.sources.get(lid, ()) if s is None or s[0] != producer]
        return len(others) == 1 and _const_values(graph, others[0]) is not None
    return False


def _convolution_kernels(graph: GraphView) -> set[int]:
    """The layers that run inside a convolution's fused kernel: the convolution and its post-ops."""
    fused = fused_post_ops(graph)
    members: set[int] = set()
    for lid in graph.order:
        if graph.type_of(lid) in _TAKES_POST_OPS and graph.type_of(lid) != "MatMul":
            link: int | None = lid
            while link is not None:
                members.add(link)
                link = fused.get(link)
    return members


def _graph_tail(graph: GraphView, heavy_kernels: set[int]) -> set[int]:
    """What lies between the Results and the nearest heavy layers, walking back. A convolution's
    bias and activation belong to its bf16 kernel; after a MatMul the tail starts right at it
    (what the CPU plugin does, its MatMuls and their post-ops being fused in another way)."""
    tail: set[int] = set()
    stack = [lid for lid in graph.order if graph.type_of(lid) == "Result"]
    while stack:
        lid = stack.pop()
        for source in graph.inputs_of(lid):
            producer = source[0]
            if graph.type_of(producer) in _HEAVY_IN_BF16 or producer in heavy_kernels or producer in tail:
                continue
            tail.add(producer)
            stack.append(producer)
    return tail


# --- the plan of a run -------------------------------------------------------------------------


@dataclass(frozen=True)
class StepRounding:
    """What to round around one layer: the input positions it must read rounded (values of
    kept layers, or unrounded Consts), and whether its own outputs are rounded."""

    inputs: tuple[int, ...]
    outputs: bool


class RoundingPlan:
    """How one compiled model rounds in one precision: built once, then applied to each run."""

    def __init__(self, compiled: Compiled, precision: str) -> None:
        self.precision = precision
        graph, plan = compiled.graph, compiled.plan
        self.kept = kept_in_f32(graph, precision)
        readers = _readers(graph)
        rounded_slots: set[int] = set()  # slots whose value is already rounded when it is read

        # An input every reader takes rounded is rounded once, as it comes in; one that a layer
        # kept in f32 reads too stays whole, and each other reader rounds it as it reads it.
        self.feeds: list[int] = []  # positions of the inputs to round
        for position, (spec, slot) in enumerate(zip(plan.inputs, plan.param_slots)):
            takers = [self._reader_rounds(graph, r) for r, _ in readers.get(spec.layer.id, ())]
            if takers and all(takers):
                self.feeds.append(position)
                rounded_slots.add(slot)

        self._convolution_kernels = _convolution_kernels(graph) if precision == "bf16" else set()
        self.const_slots = frozenset(slot for slot, _ in plan.const_slots)
        self.consts: set[int] = set()  # Const slots that hold their rounded value
        for slot, layer in plan.const_slots:
            if self._const_rounded(graph, layer.id, readers):
                self.consts.add(slot)
                rounded_slots.add(slot)

        fused = fused_post_ops(graph)
        self.steps: dict[int, StepRounding] = {}
        for step in plan.steps:
            lid = step.layer.id
            sources = graph.sources[lid]
            floats = {i: source for i, source in enumerate(sources)  # the float inputs, by position
                      if source is not None and _is_float(graph, source)}
            moves_values = graph.type_of(lid) in _MOVES_VALUES
            if lid in self.kept or lid in fused:  # in f32, or the f32 accumulator of a fused kernel
                self.steps[lid] = StepRounding((), False)
                if moves_values and all(step.inputs[i] in rounded_slots for i in floats):
                    rounded_slots.update(step.outputs)
                continue
            to_round = tuple(i for i in floats
                             if step.inputs[i] not in rounded_slots
                             and fused.get(floats[i][0]) != lid  # a value inside one kernel stays whole
                             and self._reads_rounded(graph, lid, step.inputs[i]))
            already_rounded = moves_values and all(step.inputs[i] in rounded_slots or i in to_round for i in floats)
            self.steps[lid] = StepRounding(to_round, not already_rounded)
            rounded_slots.update(step.outputs)

        # In f16 the device hands its outputs over rounded, kept layers' outputs too.
        self.results = [] if precision == "bf16" else [s for s in plan.output_slots if s not in rounded_slots]
        self._const_copies: dict[int, np.ndarray] = {}

    def _reader_rounds(self, graph: GraphView, lid: int) -> bool:
        """Whether a reader of a fed input needs it rounded: a layer in the lower precision, or in
        f16 a Result (the device hands its outputs over in f16)."""
        if graph.type_of(lid) == "Result":
            return self.precision == "f16"
        return lid not in self.kept

    def _const_rounded(self, graph: GraphView, lid: int, readers: Mapping[int, list[tuple[int, Source]]]) -> bool:
        """Rounded once for all its readers, unless it or one of them stays in f32 (a kept reader
        reads it whole, the others round it as they read it)."""
        takers = [r for r, _ in readers.get(lid, ())]
        if lid in self.kept or any(r in self.kept for r in takers):
            return False
        return self.precision != "bf16" or all(self._rounds_const_in_bf16(graph, r) for r in takers)

    def _rounds_const_in_bf16(self, graph: GraphView, reader: int) -> bool:
        """The CPU keeps a Const f32 where an element-wise layer reads it, and rounds it where a
        heavy layer, a Concat or a post-op inside a convolution's kernel (its bias) reads it."""
        kind = graph.type_of(reader)
        return kind in _HEAVY_IN_BF16 or kind == "Concat" or reader in self._convolution_kernels

    def _reads_rounded(self, graph: GraphView, lid: int, slot: int) -> bool:
        """Whether a rounded layer must read the unrounded value in `slot` rounded."""
        if self.precision == "bf16" and slot in self.const_slots:
            return self._rounds_const_in_bf16(graph, lid)
        return True

    # --- applied to a run ---

    def round_boundary(self, values: list[Any], param_slots: Sequence[int], donated: frozenset[int]) -> None:
        """Round the fed inputs (in place only where the caller donated the buffer) and put
        the rounded Const values, made once, in their slots."""
        for position in self.feeds:
            slot = param_slots[position]
            value = values[slot]
            if not _roundable(value):
                continue
            if position in donated and value.flags.writeable:
                round_in_place(value, self.precision)
            else:
                values[slot] = rounded(value, self.precision)
        for slot in self.consts:
            values[slot] = self._const_copy(slot, values[slot])

    def _const_copy(self, slot: int, value: Any) -> Any:
        if not _roundable(value):
            return value
        copy = self._const_copies.get(slot)
        if copy is None:
            copy = rounded(value, self.precision)
            copy.flags.writeable = False  # shared by every run, like the Const's own value
            self._const_copies[slot] = copy
        return copy

    def round_inputs(self, lid: int, args: list[Any], input_slots: Sequence[int]) -> None:
        """Replace the inputs a layer must read rounded with rounded copies."""
        for i in self.steps[lid].inputs:
            if _roundable(args[i]):
                args[i] = self._edge_copy(input_slots[i], args[i])

    def _edge_copy(self, slot: int, value: np.ndarray) -> np.ndarray:
        if slot in self.const_slots:  # a Const's value: rounded once for every run
            return self._const_copy(slot, value)
        return rounded(value, self.precision)

    def round_outputs(self, lid: int, out: Any, args: Sequence[Any]) -> Any:
        """The layer's outputs, rounded unless the layer stays in f32: in place when the kernel
        made the buffer (no input, no Const, no view), into a new array otherwise."""
        if not self.steps[lid].outputs:
            return out
        if isinstance(out, tuple):
            return tuple(self._round_output(o, args) for o in out)
        return self._round_output(out, args)

    def _round_output(self, value: Any, args: Sequence[Any]) -> Any:
        if not _roundable(value):
            return value
        if value.base is None and value.flags.writeable and not any(value is a for a in args):
            round_in_place(value, self.precision)
            return value
        return rounded(value, self.precision)

    def round_results(self, values: list[Any]) -> None:
        """Round the model outputs that kept layers produced, as the device converts them."""
        for slot in self.results:
            if _roundable(values[slot]):
                values[slot] = rounded(values[slot], self.precision)


_PLANS: weakref.WeakKeyDictionary[Compiled, dict[str, RoundingPlan]] = weakref.WeakKeyDictionary()


def active_plan(compiled: Compiled) -> RoundingPlan | None:
    """The rounding plan of `compiled` for the precision being emulated; None when no precision
    is (the plain run, unchanged). Plans are made once per compiled model and precision."""
    precision = context.current().precision
    if precision is None:
        return None
    plans = _PLANS.get(compiled)
    if plans is None:
        plans = _PLANS[compiled] = {}
    plan = plans.get(precision)
    if plan is None:
        plan = plans[precision] = RoundingPlan(compiled, precision)
    return plan


__all__ = ["F32_MARK", "PRECISIONS", "RoundingPlan", "StepRounding", "active_plan",
           "checked_precision", "emulated_precision", "emulating", "fused_post_ops", "keeps_f32", "kept_in_f32",
           "round_in_place", "rounded"]
