"""Which layer went wrong: irscatter's value of every tensor against a target runtime's.

irscatter computes every tensor of the model once, without changing the graph, and is the
reference. Two ways to ask the target:

* Layer by layer (`compare_layers`): each layer runs on the target alone, fed irscatter's
  values of its inputs, so every kernel is judged on identical inputs, with no fusion and no
  error carried from upstream. Inputs that are constants in the model (Consts, and values
  irscatter's inference folds, such as shape arithmetic) stay constants, as the target would
  see them after its own folding; the others become Parameters. Many layers go into one
  target model, so that a target compiles once per batch; when a batch fails (the target
  refuses it, crashes or hangs), it is halved until the layer at fault stands alone.
* The whole model (`compare_whole`): the target runs the model file as it compiles it, fusions
  and all, and its outputs are compared. `bisect=True` then looks for the first layer whose
  value diverges, by running prefixes of the graph in topological order (each prefix returns
  every tensor that later layers read) and halving the range between a clean prefix and a
  diverging one.

The target runs in a worker process (`irscatter.targets`): a crash or a hang on one layer is a
finding about that layer, never the end of the comparison.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Container, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.debug.extract import BOUNDARY, Written, first_holding, prefix, tensor_key, typed, write
from irscatter.debug.held import needed
from irscatter.debug.tolerances import Tolerances, at_device_precision
from irscatter.debug.verdicts import LayerResult, Report, TensorResult
from irscatter.errors import Argument, UsageError, elide
from irscatter.ir.graph import Layer
from irscatter.ir.writer import IRWriter, Tensor
from irscatter.metrics import diff
from irscatter.runtime.interpreter import CompiledModel
from irscatter.runtime.precision import kept_in_f32
from irscatter.runtime.steps import run_steps
from irscatter.targets import user
from irscatter.targets.openvino import OpenVINOTarget, exactly_as
from irscatter.targets.protocol import Target
from irscatter.targets.worker import TargetFailure

Source = tuple[int, int]
# Layers whose value on a target cannot be judged against irscatter's from the layer alone.
_NO_STANDALONE_FORM = {
    "ReadValue": "a variable's value belongs to the model's state, which a layer alone does not carry",
    "Assign": "it writes the model's state and has no output to compare",
    "Multinomial": "it draws from the target's own random generator",
}
PRECISIONS = ("f32", "f16", "bf16")
# The arguments of `open_target` its messages speak of.
_TARGET, _PROPERTIES = Argument("target"), Argument("properties")



def open_target(target: str, precision: str = "f32", timeout: float = 120.0,
                properties: Mapping[str, str] | None = None) -> Target:
    """A target from its spelling: `python:MODULE:NAME`, a user's runtime (targets/user.py),
    or `openvino` or `openvino:DEVICE`, compiled with `properties` (OpenVINO's, KEY: VALUE).
    A device this machine does not have, or an OpenVINO that is not installed, is refused
    here, once."""
    kind, _, device = target.partition(":")
    if precision not in PRECISIONS:
        raise UsageError(Argument("precision"), f" must be one of {', '.join(PRECISIONS)}, got {precision}",
                         value=precision)
    if target.startswith(user.PREFIX):
        try:
            return user.load(target, precision, properties or {})
        except ValueError as e:
            raise UsageError(_TARGET, f" {e}", value=target) from None
    if kind != "openvino":
        raise UsageError(_TARGET, f' {target}: the targets are "openvino", "openvino:DEVICE" and a runtime of '
                         f'your own, "python:MODULE:NAME"', value=target)
    if properties and "INFERENCE_PRECISION_HINT" in properties:
        raise UsageError(_PROPERTIES, " INFERENCE_PRECISION_HINT: give the precision with ", Argument("precision"),
                         value=dict(properties))
    opened = OpenVINOTarget(device or "CPU", precision, timeout, properties)
    try:
        opened.check_device()
        if properties:
            opened.ran_precision()  # compiles a probe with them: a property the device refuses is refused here
    except TargetFailure as e:
        opened.close()
        if e.kind == "unavailable":
            raise UsageError(_TARGET, f" {target}: {e.message}", value=target) from None
        if e.kind == "refused" and properties:
            said = [line.strip() for line in e.message.splitlines() if line.strip()]  # its last line says why
            raise UsageError(_PROPERTIES, f": OpenVINO refuses it: {elide(said[-1] if said else e.message)}",
                             value=dict(properties)) from None
        raise
    return opened


# --- irscatter's values ---------------------------------------------------------------------------


def reference_values(compiled: CompiledModel, feeds: Any, precision: str | None = None, *,
                     into: MutableMapping[Source, np.ndarray] | None = None,
                     keep: Container[Source] | None = None,
                     decompression: str | None = None) -> MutableMapping[Source, np.ndarray]:
    """Every tensor of the model as irscatter computes it, keyed (layer id, output position);
    with `precision` ("f16", "bf16"), as irscatter emulates a device inferring in it; with
    `decompression="f32"`, compressed weights decompressed in f32 as OpenVINO's CPU plugin does
    (`runtime/decompression.py`). `into`
    receives them (a `held.ValueStore` spills past a memory budget; a new dict by default);
    with `keep`, only those tensors of the layers that run, besides the inputs and Consts.

    Read through a hook, not `intermediate=True`, so that two layers of one name cannot
    collide; the hook also turns buffer reuse off, so no value is overwritten later."""
    values: MutableMapping[Source, np.ndarray] = {} if into is None else into
    graph = compiled.graph
    outer = graph.layers

    def hold(layer: Layer, _inputs: tuple, outputs: tuple) -> None:
        if outer.get(layer.id) is layer:  # a layer of a body is reported renamed: not ours
            for pos, value in enumerate(outputs):
                if value is not None and (keep is None or (layer.id, pos) in keep):
                    values[(layer.id, pos)] = value

    compiled.run(feeds, hook=hold, precision=precision, decompression=decompression)
    for spec, array in zip(compiled.inputs, compiled.feed_arrays(feeds)):
        values[(spec.layer.id, 0)] = array
    for lid in graph.of_type("Const"):
        values[(lid, 0)] = outer[lid].const_value
    return values


# --- layer by layer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batching:
    """How many layers go into one target model: at most `layers`, and at most `feed_bytes` of
    fed values (a batch that would pass it is closed before the layer that would)."""

    layers: int = 256
    feed_bytes: int = 256 << 20


def compare_layers(compiled: CompiledModel, feeds: Any, target: Target, tolerances: Tolerances, *,
                   values: Mapping[Source, np.ndarray] | None = None, batching: Batching = Batching(),
                   progress: Callable[[int, int | None], None] | None = None) -> Report:
    """Every layer of `compiled` run alone on `target`, fed irscatter's values of its inputs."""
    start = time.perf_counter()
    values = reference_values(compiled, feeds) if values is None else values
    report = _new_report(compiled, target, "layers")
    tolerances = at_device_precision(target, tolerances)
    candidates = []
    kept = _kept_in_f32(compiled, tolerances.precision)
    for position, lid in enumerate(compiled.graph.kernels):
        record = _record(compiled, lid, position)
        reason = _no_standalone_form(compiled, lid, values) or (
            f"the device keeps it in f32 within the model, but run alone it computes it in {tolerances.precision}: "
            "the whole model's comparison judges it" if lid in kept else None)
        if reason:
            record.status, record.reason = "not compared", reason
        else:
            candidates.append(record)
        report.layers.append(record)
    with tempfile.TemporaryDirectory(prefix="irscatter-compare-") as folder:
        runner = _LayerRunner(compiled, values, target, tolerances, Path(folder))
        done = 0
        for batch in _batches(candidates, compiled, values, batching):
            runner.run(batch)
            done += len(batch)
            if progress is not None:
                progress(done, len(candidates))
    report.seconds = time.perf_counter() - start
    return report


def sides_of(target: Target) -> tuple[str, str]:
    """(target, reference) as reports name them: the target's `name` ("openvino:CPU"), or
    "target" for one without, against irscatter."""
    return str(getattr(target, "name", "") or "target"), "irscatter"


def _new_report(compiled: CompiledModel, target: Target, mode: str, **fields: Any) -> Report:
    name, reference = sides_of(target)
    return Report(compiled.model.source, target.describe(), mode, target_name=name, reference_name=reference, **fields)


def _record(compiled: CompiledModel, lid: int, position: int) -> LayerResult:
    layer = compiled.graph.layers[lid]
    return LayerResult(position, lid, layer.name, compiled.graph.op(lid).label(), layer.line, "pending")


def _kept_in_f32(compiled: CompiledModel, precision: str) -> frozenset[int]:
    """The layers a target inferring in f16 or bf16 keeps in f32 (`runtime/precision.py`): run
    alone they lose what kept them (an Exp whose sum would overflow), so alone they say nothing."""
    if precision not in ("f16", "bf16"):
        return frozenset()
    return kept_in_f32(compiled.graph, precision)


def _no_standalone_form(compiled: CompiledModel, lid: int, values: Mapping[Source, np.ndarray]) -> str | None:
    graph = compiled.graph
    if graph.type_of(lid) in _NO_STANDALONE_FORM:
        return _NO_STANDALONE_FORM[graph.type_of(lid)]
    domain = graph.op(lid).domain
    if domain not in ("opset", "extension"):  # OpenVINO's plugins register their internal ops as `extension`
        return f"its op belongs to the {domain} opset, which the target does not have"
    if any(src not in values for src in graph.inputs_of(lid)):
        return "irscatter did not compute one of its inputs"
    if not any(src in values for src in graph.outputs_of(lid)):
        return "irscatter did not compute its outputs"
    return None


def _batches(records: list[LayerResult], compiled: CompiledModel, values: Mapping[Source, np.ndarray],
             batching: Batching) -> Iterable[list[LayerResult]]:
    batch: list[LayerResult] = []
    size = 0
    for record in records:
        fed = sum(values[src].nbytes for src in compiled.graph.inputs_of(record.id))
        if batch and (len(batch) >= batching.layers or size + fed > batching.feed_bytes):
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += fed
    if batch:
        yield batch


class _LayerRunner:
    """Runs batches of layers on the target, halving a batch that fails."""

    def __init__(self, compiled: CompiledModel, values: Mapping[Source, np.ndarray], target: Target,
                 tolerances: Tolerances, folder: Path) -> None:
        self.compiled, self.values, self.target, self.tolerances, self.folder = (
            compiled, values, target, tolerances, folder)
        self.sides = sides_of(target)
        self._count = 0

    def run(self, batch: list[LayerResult]) -> None:
        xml, feeds, results = self._write(batch)
        try:
            outputs = self.target.infer(xml, feeds)
        except TargetFailure as failure:
            if len(batch) > 1:
                half = len(batch) // 2
                self.run(batch[:half])
                self.run(batch[half:])
                return
            batch[0].status, batch[0].reason = failure.kind, failure.message
            return
        for (record, pos), got in zip(results, outputs):
            src = (record.id, pos)
            record.tensors.append(judged_tensor(self.compiled, src, got, self.values[src], self.tolerances, self.sides))
        for record in batch:
            record.status = "failed" if any(not t.diff.passed for t in record.tensors) else "passed"

    def _write(self, batch: list[LayerResult]) -> tuple[Path, dict[str, np.ndarray], list[tuple[LayerResult, int]]]:
        compiled, values = self.compiled, self.values
        graph = compiled.graph
        writer = IRWriter("layers")
        feeds: dict[str, np.ndarray] = {}
        results: list[tuple[LayerResult, int]] = []
        for record in batch:
            lid = record.id
            layer = graph.layers[lid]
            sources: list[Tensor | None] = []
            for i, src in enumerate(graph.sources[lid]):
                if src is None:
                    sources.append(None)
                    continue
                name = f"l{lid}_in{i}"
                etype = typed(compiled, values, src)[0]
                if _constant_on_target(compiled, src):
                    sources.append(writer.const(name, values[src], etype))
                else:
                    sources.append(writer.parameter(name, etype, values[src].shape, (name,)))
                    feeds[name] = values[src]
            inputs = [typed(compiled, values, src) for src in graph.sources[lid]]
            outputs = [typed(compiled, values, src) for src in graph.outputs_of(lid)]
            produced = writer.copy(layer, sources, inputs, outputs)
            for pos, tensor in enumerate(produced):
                if (lid, pos) in values:
                    etype, shape = outputs[pos]
                    writer.result(f"l{lid}_out{pos}", tensor, etype, shape)
                    results.append((record, pos))
        self._count += 1
        xml = writer.save(self.folder / f"batch{self._count}.xml")
        return xml, feeds, results


def _constant_on_target(compiled: CompiledModel, src: Source) -> bool:
    """Whether the target sees this input as a constant: a Const, or a value irscatter's
    inference folded (shape arithmetic), which the target folds too. Packed element types
    (u4, i4, ...) go as constants as well, since they cannot be fed as arrays."""
    info = compiled.graph.infos[src]
    return compiled.graph.type_of(src[0]) == "Const" or info.value is not None or info.etype.is_packed


# --- the whole model ----------------------------------------------------------------------------


def compare_whole(compiled: CompiledModel, feeds: Any, target: Target, tolerances: Tolerances, *,
                  bisect: bool = False, values: Mapping[Source, np.ndarray] | None = None,
                  xml: str | Path | None = None) -> Report:
    """The model file as the target compiles it, its outputs against irscatter's; with
    `bisect`, then the first layer whose value diverges. `xml` runs another file of the same
    graph on the target instead (the model with marks added to its rt_info, say)."""
    start = time.perf_counter()
    values = reference_values(compiled, feeds, keep=needed(compiled, every=bisect)) if values is None else values
    report = _new_report(compiled, target, "whole")
    tolerances = at_device_precision(target, tolerances)
    xml = Path(compiled.model.source if xml is None else xml)
    named = _named_feeds(compiled, values)
    try:
        got = target.infer(xml, named)
        names = target.output_names(xml)
    except TargetFailure as failure:
        report.outputs = _failed_outputs(compiled, failure)
        report.seconds = time.perf_counter() - start
        return report
    report.outputs = [_judged_output(compiled, i, values[compiled.graph.returned(spec.layer.id)], got, names, tolerances,
                                     spec.name, report.sides) for i, spec in enumerate(compiled.outputs)]
    if bisect and not report.ok:
        with tempfile.TemporaryDirectory(prefix="irscatter-bisect-") as folder:
            report.bisect, report.bisect_note = _bisect(compiled, values, target, tolerances, Path(folder))
    report.seconds = time.perf_counter() - start
    return report


def _failed_outputs(compiled: CompiledModel, failure: TargetFailure) -> list[LayerResult]:
    """One record per output of a model the target failed on as a whole."""
    return [_output_record(compiled, i, failure.kind, failure.message) for i in range(len(compiled.outputs))]


def _judged_output(compiled: CompiledModel, i: int, want: np.ndarray, got: Sequence[np.ndarray],
                   names: list[list[str]], tolerances: Tolerances, key: str, sides: tuple[str, str]) -> LayerResult:
    """Output `i` of the model against the target's output of its name, as a record whose
    tensor is keyed `key`. OpenVINO reads an IR v10 file under its legacy conventions (an i64
    output given as i32, a boolean or u8 one as f32): its answer is taken in the type the file
    declares when that type holds it exactly."""
    spec = compiled.outputs[i]
    record = _output_record(compiled, i, "pending")
    j = _match_output(spec.names, spec.name, names, i)
    if j is None:
        record.status, record.reason = "not compared", "the target has no output of this name"
        return record
    want = np.asarray(want)
    theirs = exactly_as(got[j], want.dtype) if compiled.model.ir_version == 10 else got[j]
    src = compiled.graph.returned(spec.layer.id)
    record.tensors.append(judged_tensor(compiled, src, theirs, want, tolerances, sides, key))
    record.status = "passed" if record.tensors[0].diff.passed else "failed"
    return record


def compare_steps(compiled: CompiledModel, steps: Sequence[Mapping[str, Any]], target: Any, tolerances: Tolerances,
                  *, precision: str | None = None, decompression: str | None = None) -> Report:
    """A stateful model run step after step, as the target compiles it: irscatter's variables
    and the target's infer request each carried from one step to the next, every output of
    every step against irscatter's (the records in step order, keyed `step<k>/<output>`), so
    the first divergence says at which step the state first went wrong."""
    start = time.perf_counter()
    report = _new_report(compiled, target, "whole", steps=len(steps))
    tolerances = at_device_precision(target, tolerances)
    xml = Path(compiled.model.source)
    mine, named = [], []
    request = compiled.new_request()  # variables of its own, from their initial values
    for current, outputs in run_steps(request, steps, precision=precision, decompression=decompression):
        mine.append(outputs)
        arrays = request.feed_arrays(current)
        named.append({(spec.names[0] if spec.names else spec.name): a for spec, a in zip(compiled.inputs, arrays)})
    try:
        got = target.infer_steps(xml, named)
        names = target.output_names(xml)
    except TargetFailure as failure:
        report.outputs = _failed_outputs(compiled, failure)
        report.seconds = time.perf_counter() - start
        return report
    report.outputs = [_judged_output(compiled, i, ours[i], theirs, names, tolerances, f"step{k}/{spec.name}",
                                     report.sides)
                      for k, (ours, theirs) in enumerate(zip(mine, got)) for i, spec in enumerate(compiled.outputs)]
    report.seconds = time.perf_counter() - start
    return report


def _named_feeds(compiled: CompiledModel, values: Mapping[Source, np.ndarray]) -> dict[str, np.ndarray]:
    """The feeds under a name the target knows each input by: its first tensor name, else its
    Parameter's name."""
    return {(spec.names[0] if spec.names else spec.name): values[(spec.layer.id, 0)] for spec in compiled.inputs}


def _match_output(names: tuple[str, ...], name: str, target_names: list[list[str]], position: int) -> int | None:
    wanted = set(names) | {name}
    for j, theirs in enumerate(target_names):
        if wanted & set(theirs):
            return j
    if not any(target_names) and position < len(target_names):
        return position  # neither side names its outputs: the order of the Results decides
    return None


def _output_record(compiled: CompiledModel, i: int, status: str, reason: str | None = None) -> LayerResult:
    spec = compiled.outputs[i]
    graph = compiled.graph
    lid, _ = graph.returned(spec.layer.id)
    layer = graph.layers[lid]
    position = graph.kernels.index(lid) if layer.type not in BOUNDARY else -1
    return LayerResult(position, lid, layer.name, graph.op(lid).label(), layer.line, status, reason)


def judge(compiled: CompiledModel, target: Target, tolerances: Tolerances, written: Written,
          values: Mapping[Source, np.ndarray]) -> tuple[list[TensorResult], dict[str, np.ndarray]]:
    """A model written by `extract.write` run on the target, fed irscatter's values of its
    inputs: each output against irscatter's value, and the target's outputs by name. Raises
    the target's `TargetFailure`."""
    feeds = {name: values[src] for src, name in written.input_names.items()}
    got = target.infer(written.xml, feeds)
    by_name = {n: array for theirs, array in zip(target.output_names(written.xml), got) for n in theirs}
    tensors, actual = [], {}
    sides = sides_of(target)
    for src, name in written.output_names.items():
        if name not in by_name:
            continue
        actual[name] = by_name[name]
        tensors.append(judged_tensor(compiled, src, by_name[name], values[src], tolerances, sides))
    return tensors, actual


def judged_tensor(compiled: CompiledModel, src: Source, theirs: np.ndarray, ours: np.ndarray, tolerances: Tolerances,
                  sides: tuple[str, str], key: str | None = None) -> TensorResult:
    """The target's value of tensor `src` against irscatter's, under the tolerance its key
    picks, recorded under `key` (its key, unless another is given) with its tensor names."""
    own = tensor_key(compiled, src)
    ours = np.asarray(ours)
    judged = diff(theirs, ours, tolerances.for_tensor(own, ours.dtype), sides)
    return TensorResult(key or own, judged, tuple(compiled.graph.layers[src[0]].outputs[src[1]].names))


def _bisect(compiled: CompiledModel, values: Mapping[Source, np.ndarray], target: Target, tolerances: Tolerances,
            folder: Path) -> tuple[LayerResult | None, str]:
    """The first prefix of the topological order whose cut tensors diverge on the target, by
    halving; returns its last layer (with the tensors that diverged) and a note on the search."""
    order = compiled.graph.kernels
    outcomes: dict[int, LayerResult | None] = {}

    def diverging(end: int) -> bool:
        outcome = _run_prefix(compiled, values, target, tolerances, order, end,
                              folder / f"prefix{len(outcomes) + 1}" / "model.xml")
        outcomes[end] = outcome
        return outcome is not None and outcome.status == "failed"

    if not diverging(len(order) - 1):
        note = ("the whole graph as irscatter writes it runs clean on the target; the divergence depends on "
                "something of the original file (its rt_info, or fusions only the full model allows)")
        return None, note
    first = first_holding(-1, len(order) - 1, diverging)
    note = f"{len(outcomes)} prefixes run; the prefix ending at position {first} is the first that diverges"
    return outcomes[first], note


def _run_prefix(compiled: CompiledModel, values: Mapping[Source, np.ndarray], target: Target, tolerances: Tolerances,
                order: Sequence[int], end: int, xml: Path) -> LayerResult | None:
    """Layers order[0..end] run on the target, returning every tensor a later layer or a
    Result reads: the record of order[end], holding the tensors that diverged. None when the
    target could not run the prefix."""
    written = write(compiled, prefix(compiled, order, end, values), xml, values)
    try:
        tensors, _ = judge(compiled, target, tolerances, written, values)
    except TargetFailure:
        return None
    record = _record(compiled, order[end], end)
    record.tensors = [t for t in tensors if not t.diff.passed]
    record.status = "failed" if record.tensors else "passed"
    return record
