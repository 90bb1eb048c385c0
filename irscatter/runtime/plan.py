"""The plan of a compiled model: a list of steps over numbered value slots.

Every output port of a layer the Results need gets a slot. Each step (a layer other than a
Parameter, Const or Result) reads its input slots and writes its output slots, and knows which
slots to drop once it has run, so that an intermediate buffer lives only until its last
reader. A step may also write its output into an input's buffer (the op's `inplace_input`)
when it is that buffer's last reader, leave out outputs nobody reads, or update a fed buffer
the caller donates (the op's `writes_inputs`). Layers that depend on Consts alone are planned
to be computed once (`runtime/folding.py`).

The plan is made once per compiled model and shared by its requests; a run only reads it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from irscatter import limits
from irscatter.checks.analysis import Analysis
from irscatter.checks.infer import itemsize
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer, Model, output_name
from irscatter.ir.topology import Source
from irscatter.ops.activation.softmax import Softmax
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.matrix.mat_mul import MatMul
from irscatter.ops.movement.concat import Concat
from irscatter.ops.state.assign import Assign
from irscatter.runtime.compressed import fuse_compressed, watched_step
from irscatter.runtime.epilogues import fuse_epilogues
from irscatter.runtime.folding import FoldPlan, keep_once, producers_of, readers_of
from irscatter.runtime.graph_view import BOUNDARY
from irscatter.runtime.grouped_attention import fuse_grouped_attention
from irscatter.runtime.ports import InputSpec, OutputSpec


@dataclass(slots=True, eq=False)  # slots: a model of 20000 layers builds 20000 of these, and runs read them
class Step:
    layer: Layer
    compute: Callable[..., Any]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    release: tuple[int, ...]  # slots whose last reader is this step
    # The slot whose buffer the kernel may write its output into (the op's `inplace_input`),
    # when this step is its last reader; and, when that slot is a Parameter's, the input's
    # position, since a fed buffer may only be reused if the caller donates it.
    reuse_slot: int | None = None
    reuse_input: int | None = None
    # Output positions no later step and no Result reads, for an op that can leave them out.
    unused: frozenset[int] = frozenset()
    # (input position, model input position) of each input the op updates in place when the
    # caller donates it (the op's `writes_inputs` that are fed by a Parameter).
    writable: tuple[tuple[int, int], ...] = ()


@dataclass(eq=False)
class Plan:
    """What a run of a compiled model does, laid out once when compiling."""

    slot_of: dict[Source, int]  # (layer id, output position) -> slot
    n_slots: int
    inputs: list[InputSpec]
    param_slots: list[int]  # per input, in Parameter order
    const_slots: list[tuple[int, Layer]]
    outputs: list[OutputSpec]
    output_slots: list[int]  # per output, in Result order
    steps: list[Step] = field(default_factory=list)
    # The Consts a plain run reads: not the codes of a compressed weight, which its lookup reads.
    run_const_slots: list[tuple[int, Layer]] = field(default_factory=list)
    fold: FoldPlan = field(default_factory=FoldPlan)
    # The steps of a run that reads the kept values of Const-only layers instead of computing
    # them (and that looks compressed weights up by blocks, `runtime/compressed.py`).
    run_steps: list[Step] = field(default_factory=list)
    # The steps of a run that watches every layer without changing any value: all of them, and
    # a compressed weight's product made as a plain run makes it, from the weight it is given
    # or as it computes it, so that both runs give the same bits.
    watched_steps: list[Step] = field(default_factory=list)
    # Every input has a static shape and element type: a run never infers again.
    is_static: bool = True
    # The f32/f64 Consts whose readers all take a misaligned array at full speed: they are
    # read where the `.bin` holds them, whatever their offset (`runtime/consts.py`).
    misaligned_ok: frozenset[int] = frozenset()

    @classmethod
    def of(cls, model: Model, analysis: Analysis) -> Plan:
        """The plan of `model`, from what compiling it found (`checks/analysis.py`)."""
        layers, infos = analysis.wiring.by_id, analysis.infos
        slot_of = _slots(analysis.order, layers)
        parameters = model.parameters
        inputs = [InputSpec(p.name, p.outputs[0].names if p.outputs else (), infos[(p.id, 0)].etype,
                            infos[(p.id, 0)].shape, p)
                  for p in parameters]
        outputs, output_slots = _outputs(model.results, analysis, slot_of)
        plan = cls(slot_of=slot_of, n_slots=len(slot_of), inputs=inputs,
                   param_slots=[slot_of[(p.id, 0)] for p in parameters],
                   const_slots=[(slot_of[(lid, 0)], layers[lid]) for lid in analysis.order
                                if layers[lid].type == "Const"],
                   outputs=outputs, output_slots=output_slots,
                   is_static=all(spec.shape.is_static and spec.etype is not ElementType.dynamic for spec in inputs))
        plan.steps = _steps(plan, analysis)
        producers, readers = producers_of(plan.steps), readers_of(plan.steps)
        plan.misaligned_ok = _misaligned_ok(plan, readers)
        _mark_growing_caches(plan.steps, analysis.ops, producers)
        _mark_softmax_products(plan.steps, analysis.ops, producers)
        slot_infos = {slot: info for key, slot in slot_of.items() if (info := infos.get(key)) is not None}
        plan.fold = _plan_folding(plan, analysis, slot_infos, readers)
        _fuse_steps(plan, analysis, slot_infos, producers, readers)
        plan.run_steps = [plan.fold.replaced.get(i, step) for i, step in enumerate(plan.steps)
                          if i not in plan.fold.skipped]
        plan.watched_steps = [watched_step(step, plan.fold.replaced.get(i)) for i, step in enumerate(plan.steps)] \
            if plan.fold.replaced else plan.steps
        read = {slot for step in plan.run_steps for slot in step.inputs} | set(plan.output_slots) \
            | {slot for i in plan.fold.once for slot in plan.steps[i].inputs}
        plan.run_const_slots = [(slot, layer) for slot, layer in plan.const_slots if slot in read]
        return plan


def _slots(order: list[int], layers: dict[int, Layer]) -> dict[Source, int]:
    """A value slot per output, numbered in run order."""
    slot_of: dict[Source, int] = {}
    for lid in order:
        count = len(layers[lid].outputs)
        if count == 1:  # (most layers: no loop over one position)
            slot_of[(lid, 0)] = len(slot_of)
        else:
            for pos in range(count):
                slot_of[(lid, pos)] = len(slot_of)
    return slot_of


def _outputs(results: list[Layer], analysis: Analysis,
             slot_of: dict[Source, int]) -> tuple[list[OutputSpec], list[int]]:
    """The model's outputs in Result order, each under a key of its own, and their slots."""
    outputs: list[OutputSpec] = []
    slots: list[int] = []
    taken: set[str] = set()
    for r in results:
        src = analysis.wiring.sources[r.id][0]
        assert src is not None
        info = analysis.infos[src]
        port = analysis.wiring.by_id[src[0]].outputs[src[1]]
        name = _distinct(output_name(r, port), r.name, taken)
        taken.add(name)
        outputs.append(OutputSpec(name, info.etype, info.shape, r, tuple(port.names)))
        slots.append(slot_of[src])
    return outputs, slots


def _steps(plan: Plan, analysis: Analysis) -> list[Step]:
    layers, ops, sources, slot_of = analysis.wiring.by_id, analysis.ops, analysis.wiring.sources, plan.slot_of
    steps_layers = [lid for lid in analysis.order if layers[lid].type not in BOUNDARY]
    keep = set(plan.output_slots) | {s for s, _ in plan.const_slots}
    last_reader: dict[int, int] = {}
    readers: dict[int, int] = {}
    step_inputs = []
    for i, lid in enumerate(steps_layers):
        inputs = tuple([slot_of[s] for s in sources[lid]])  # type: ignore[index]  # (compiling refused an unwired input)
        step_inputs.append(inputs)
        counted = not ops[lid].shape_only
        for slot in inputs:
            last_reader[slot] = i
            if counted:
                readers[slot] = readers.get(slot, 0) + 1
    releases: dict[int, list[int]] = {}
    for slot, i in last_reader.items():
        if slot not in keep:
            releases.setdefault(i, []).append(slot)
    param_input = {slot: i for i, slot in enumerate(plan.param_slots)}
    steps = []
    for i, (lid, inputs) in enumerate(zip(steps_layers, step_inputs)):
        op, layer = ops[lid], layers[lid]
        n_outputs = len(layer.outputs)
        outputs = (slot_of[(lid, 0)],) if n_outputs == 1 else tuple(slot_of[(lid, p)] for p in range(n_outputs))
        step = Step(layer, op.compute, inputs, outputs, tuple(releases.get(i, ())))
        if op.inplace_input is not None:  # (most ops have none of the three: each is asked first)
            step.reuse_slot = reuse = _reusable(op, inputs, i, keep, last_reader, readers, param_input)
            step.reuse_input = param_input.get(reuse) if reuse is not None else None
        if op.skips_unused_outputs:
            step.unused = _unused_outputs(op, outputs, keep, last_reader)
        if op.writes_inputs:
            step.writable = tuple((pos, param_input[inputs[pos]]) for pos in op.writes_inputs
                                  if pos < len(inputs) and inputs[pos] in param_input)
        steps.append(step)
    return steps


# What reads a misaligned weight at full speed: a MatMul's product (`products.product` gives it
# to BLAS directly) and a Gather of some of its rows (a table lookup copies what it takes).
_MISALIGNED_READERS = {"MatMul": (0, 1), "Gather": (0,)}


def _misaligned_ok(plan: Plan, readers: Mapping[int, list[int]]) -> frozenset[int]:
    """The slots of the f32/f64 Consts read only by steps of `_MISALIGNED_READERS`, at the
    inputs named there, and by no Result."""
    outputs = set(plan.output_slots)
    found = set()
    for slot, layer in plan.const_slots:
        data = layer.const_data
        if slot in outputs or data is None or data.etype not in (ElementType.f32, ElementType.f64):
            continue
        steps = [plan.steps[i] for i in readers.get(slot, ())]
        if steps and all(i in _MISALIGNED_READERS.get(step.layer.type, ())
                         for step in steps for i, read in enumerate(step.inputs) if read == slot):
            found.add(slot)
    return frozenset(found)


def _mark_growing_caches(steps: list[Step], ops: Mapping[int, Op], producers: Mapping[int, int]) -> None:
    """A Concat of two inputs whose output an Assign writes to its variable (a KV cache: the
    past rows and the new ones) keeps room to grow (`Concat.grows`, `ops/common/growth.py`)."""
    for step in steps:
        if isinstance(ops[step.layer.id], Assign) and step.inputs and (at := producers.get(step.inputs[0])) is not None:
            source = steps[at]
            if len(source.inputs) == 2 and isinstance(concat := ops[source.layer.id], Concat):
                concat.grows = True


# Layers that hand their input's values on unchanged, only moved or reshaped.
_MOVERS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Transpose"})


def _mark_softmax_products(steps: list[Step], ops: Mapping[int, Op], producers: Mapping[int, int]) -> None:
    """A MatMul input that a Softmax writes, directly or through `_MOVERS`, may be full of
    subnormal numbers (`MatMul.subnormal_inputs`, `ops/common/subnormals.py`)."""
    for step in steps:
        op = ops[step.layer.id]
        if not isinstance(op, MatMul):
            continue
        marked = set()
        for position, slot in enumerate(step.inputs[:2]):
            source = producers.get(slot)
            while source is not None and steps[source].layer.type in _MOVERS and steps[source].inputs:
                source = producers.get(steps[source].inputs[0])
            if source is not None and isinstance(ops[steps[source].layer.id], Softmax):
                marked.add(position)
        if marked:  # (else the class's empty set)
            op.subnormal_inputs = frozenset(marked)


def _plan_folding(plan: Plan, analysis: Analysis, infos: dict[int, TensorInfo],
                  readers: dict[int, list[int]]) -> FoldPlan:
    """What of the layers that depend on Consts alone to compute once (runtime/folding.py),
    within `limits.folded_bytes`, beside the MatMuls that look their compressed weights up by
    blocks instead (runtime/compressed.py); `infos`: each slot's inferred type and shape;
    `readers`: the steps that read each slot."""
    budget = limits.current().folded_bytes
    fused = fuse_compressed(plan.steps, analysis.ops, infos, dict(plan.const_slots), set(plan.output_slots), budget,
                            readers)
    slot_bytes = _SlotBytes(infos, dict.fromkeys(fused.weights))  # (those looked up by blocks on each run instead)
    return fused.into(keep_once(plan.steps, lambda step: analysis.ops[step.layer.id].foldable,
                                {s for s, _ in plan.const_slots}, set(plan.output_slots), slot_bytes,
                                budget - fused.cost))


def _fuse_steps(plan: Plan, analysis: Analysis, infos: dict[int, TensorInfo], producers: dict[int, int],
                readers: dict[int, list[int]]) -> None:
    """The steps a plain run takes fused, beside what folding and the compressed weights already
    replace: chains of element-wise layers as one step (runtime/epilogues.py: a convolution's
    bias and activation, per-channel scales and biases, residual sums, a MatMul's bias), then
    attention over grouped key-value heads without the Reshapes that copy them
    (runtime/grouped_attention.py)."""
    fold = plan.fold
    taken = set(fold.skipped) | set(fold.replaced) | set(fold.once)
    output_slots = set(plan.output_slots)
    for fusion in (fuse_epilogues(plan.steps, analysis.ops, infos, {s for s, _ in plan.const_slots} | set(fold.kept),
                                  output_slots, taken, readers),
                   fuse_grouped_attention(plan.steps, analysis.ops, infos, output_slots, taken, producers, readers)):
        if fusion.steps:
            fold = replace(fold, skipped=fold.skipped | fusion.skipped, replaced={**fold.replaced, **fusion.steps})
    plan.fold = fold


class _SlotBytes(Mapping[int, "int | None"]):
    """The bytes of each slot's value (`_static_bytes`), or of `given` ones, worked out when
    asked: folding asks for the few slots where the values of Consts alone meet the rest of
    the graph, of its thousands of slots."""

    def __init__(self, infos: dict[int, TensorInfo], given: dict[int, int | None]) -> None:
        self.infos, self.given = infos, given
        self.sizes: dict[tuple[int, ElementType], tuple[Any, int | None]] = {}

    def __getitem__(self, slot: int) -> int | None:
        if slot in self.given:
            return self.given[slot]
        return _static_bytes(self.infos.get(slot), self.sizes)

    def __iter__(self) -> Iterator[int]:
        return iter(self.infos.keys() | self.given.keys())

    def __len__(self) -> int:
        return len(self.infos.keys() | self.given.keys())


def _static_bytes(info: TensorInfo | None, sizes: dict[tuple[int, ElementType], tuple[Any, int | None]]) -> int | None:
    """The bytes of a value of a static shape and a fixed-size type; None for any other.
    `sizes` holds those found, by shape object and type: values of one shape mostly share its
    object (shapes of plain dims are made once), and working a size out costs more than this."""
    if info is None:
        return None
    key = (id(info.shape), info.etype)
    known = sizes.get(key)
    if known is not None:
        return known[1]
    if not info.shape.is_static or info.etype in (ElementType.dynamic, ElementType.string):
        size = None
    else:
        size = math.prod(info.shape.to_tuple()) * itemsize(info.etype)
    sizes[key] = (info.shape, size)  # (the shape kept, so that its id stays its own)
    return size


def _unused_outputs(op: Op, outputs: tuple[int, ...], keep: set[int], last_reader: dict[int, int]) -> frozenset[int]:
    """The output positions no later step and no Result reads (asked of an op that can leave
    them out)."""
    return frozenset(p for p, slot in enumerate(outputs) if slot not in keep and slot not in last_reader)


def _reusable(op: Op, inputs: tuple[int, ...], step: int, keep: set[int], last_reader: dict[int, int],
              readers: dict[int, int], param_input: dict[int, int]) -> int | None:
    """The input slot the step may overwrite: the op allows it, no Result or Const holds
    the slot, and no later step reads it. A Parameter's slot must have no other reader at
    all (ShapeOf aside), because views of a fed buffer cannot be told from the caller's
    own references."""
    if op.inplace_input is None or op.inplace_input >= len(inputs):  # (the caller asks only when it is set)
        return None
    slot = inputs[op.inplace_input]
    if slot in keep or last_reader.get(slot) != step or inputs.count(slot) != 1:
        return None
    if slot in param_input and readers.get(slot) != 1:
        return None
    return slot


def _distinct(name: str, result_name: str, taken: set[str]) -> str:
    """An output's key: its name, unless an earlier output has it (OpenVINO writes two Results
    of one tensor with one `output_names`), then its Result layer's name, or a numbered one.
    Every output keeps a key of its own, so none is lost from a run's outputs or their order."""
    for candidate in (name, result_name):
        if candidate not in taken:
            return candidate
    n = 2
    while f"{name}#{n}" in taken:
        n += 1
    return f"{name}#{n}"


def plain_entries(steps: list[Step]) -> list[tuple]:
    """For the plain run loop, each step as (compute, input getter, output slot, slots to
    release, None, step), or (None, None, None, slots to release, step, step) for a step the
    loop hands to the general call: one that may reuse a buffer, leave outputs out or write a
    donated input, with other than one output, or without inputs."""
    plain: list[tuple] = []
    for step in steps:
        if step.reuse_slot is None and not step.unused and not step.writable and len(step.outputs) == 1 and step.inputs:
            fetch = operator.itemgetter(*step.inputs) if len(step.inputs) > 1 else _one(step.inputs[0])
            plain.append((step.compute, fetch, step.outputs[0], step.release, None, step))
        else:
            plain.append((None, None, None, step.release, step, step))
    return plain


def _one(slot: int) -> Callable[[list[Any]], tuple[Any]]:
    """A getter of one slot's value as a 1-tuple (`itemgetter` of one index gives the bare value)."""
    def fetch(values: list[Any]) -> tuple[Any]:
        return (values[slot],)
    return fetch
