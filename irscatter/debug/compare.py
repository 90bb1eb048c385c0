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

import re
import tempfile
import time
from collections.abc import Callable, Container, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.debug.extract import BOUNDARY, Written, first_holding, prefix, steps, tensor_key, typed, write
from irscatter.debug.held import needed
from irscatter.errors import PATTERN_ERRORS, UsageError, elide
from irscatter.ir.graph import Layer
from irscatter.ir.writer import IRWriter
from irscatter.metrics import TensorDiff, Tolerance, diff, preset_for
from irscatter.runtime.interpreter import CompiledModel
from irscatter.runtime.precision import GraphView, kept_in_f32
from irscatter.runtime.steps import run_steps
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


def at_device_precision(target: Target, tolerances: Tolerances) -> Tolerances:
    """`tolerances` at the precision `target` really infers in, where it can say: judging an
    f32 answer with f16's presets would hide a fault, and a bf16 answer with f16's would
    report one that is not there."""
    ran = getattr(target, "ran_precision", None)
    precision = ran() if callable(ran) else tolerances.precision
    return tolerances if precision == tolerances.precision else replace(tolerances, precision=precision)


def emulated_at_device_precision(target: Target, emulated: str | None) -> str | None:
    """The precision to emulate irscatter's values in, `emulated` having been asked for the
    target's own precision: the one the target really runs (none when that is f32)."""
    ran = getattr(target, "ran_precision", None)
    if emulated is None or not callable(ran) or getattr(target, "precision", None) != emulated:
        return emulated
    precision = ran()
    return None if precision == "f32" else precision


def open_target(spec: str, precision: str = "f32", timeout: float = 120.0,
                properties: Mapping[str, str] | None = None) -> OpenVINOTarget:
    """A target from its command-line spelling: `openvino` or `openvino:DEVICE`, compiled with
    `properties` (OpenVINO's, as `--target-config KEY=VALUE` gives them). A device this machine
    does not have, or an OpenVINO that is not installed, is refused here, once."""
    kind, _, device = spec.partition(":")
    if kind != "openvino":
        raise UsageError(f'--target {spec}: the targets are "openvino" and "openvino:DEVICE"')
    if precision not in PRECISIONS:
        raise UsageError(f"--target-precision must be one of {', '.join(PRECISIONS)}, got {precision}")
    if properties and "INFERENCE_PRECISION_HINT" in properties:
        raise UsageError("--target-config INFERENCE_PRECISION_HINT: give the precision with --target-precision")
    target = OpenVINOTarget(device or "CPU", precision, timeout, properties)
    try:
        target.check_device()
        if properties:
            target.ran_precision()  # compiles a probe with them: a property the device refuses is refused here
    except TargetFailure as e:
        target.close()
        if e.kind == "unavailable":
            raise UsageError(f"--target {spec}: {e.message}") from None
        if e.kind == "refused" and properties:
            said = [line.strip() for line in e.message.splitlines() if line.strip()]  # its last line says why
            raise UsageError(f"--target-config: OpenVINO refuses it: {elide(said[-1] if said else e.message)}") from None
        raise
    return target


# --- tolerances ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tolerances:
    """How tensors are judged: the presets of the target's precision, unless `rtol`/`atol`
    are given; `overrides` are (pattern, tolerance) pairs whose pattern (a regular
    expression, searched in the tensor's `"<layer name>:<port>"` key) picks the tensors they
    apply to, the last matching one winning."""

    precision: str = "f32"
    rtol: float | None = None
    atol: float | None = None
    overrides: tuple[tuple[re.Pattern[str], Tolerance], ...] = ()

    @classmethod
    def parse(cls, precision: str = "f32", rtol: float | None = None, atol: float | None = None,
              overrides: Iterable[str] = ()) -> Tolerances:
        """Tolerances with their overrides spelled `PATTERN=RTOL[,ATOL]` (see `parse_override`)."""
        return cls(precision, rtol, atol, tuple(parse_override(text) for text in overrides))

    def for_tensor(self, key: str, dtype: np.dtype) -> Tolerance | None:
        preset = preset_for(dtype, self.precision)
        if preset is None:
            return None  # integers, booleans and strings are exact whatever is asked
        chosen = Tolerance(preset.rtol if self.rtol is None else self.rtol,
                           preset.atol if self.atol is None else self.atol)
        for pattern, tolerance in self.overrides:
            if pattern.search(key):
                chosen = tolerance
        return chosen


def parse_override(text: str) -> tuple[re.Pattern[str], Tolerance]:
    """`PATTERN=RTOL[,ATOL]`, as `--tol` takes it."""
    pattern, sep, numbers = text.rpartition("=")
    try:
        values = [float(v) for v in numbers.split(",")] if sep else []
        compiled = re.compile(pattern)
    except (ValueError, *PATTERN_ERRORS) as e:
        raise UsageError(f'--tol {elide(text)}: expected PATTERN=RTOL[,ATOL] ({e})') from None
    if not sep or not pattern or not 1 <= len(values) <= 2 or not all(v >= 0 and np.isfinite(v) for v in values):
        raise UsageError(f'--tol {text}: expected PATTERN=RTOL[,ATOL] with tolerances of at least 0')
    return compiled, Tolerance(values[0], values[1] if len(values) > 1 else values[0])


def check_overrides(tolerances: Tolerances, keys: Iterable[str]) -> None:
    """Refuse a `--tol` pattern that picks none of `keys` (the tensors to be judged): a typo
    would otherwise leave the tensor it meant under the preset, silently."""
    keys = list(keys)
    for pattern, _ in tolerances.overrides:
        if not any(pattern.search(key) for key in keys):
            raise UsageError(f'--tol {pattern.pattern}=...: the pattern matches no tensor ("<layer name>:<port id>") '
                             "to be compared")


def check_model_overrides(tolerances: Tolerances, compiled: CompiledModel) -> None:
    """`check_overrides` against every tensor of `compiled`."""
    check_overrides(tolerances, (tensor_key(compiled, src) for src in compiled.slot_of))


# --- the report ----------------------------------------------------------------------------------


@dataclass
class TensorResult:
    key: str  # "<layer name>:<port id>"
    diff: TensorDiff


@dataclass
class LayerResult:
    """One layer's verdict: `passed`, `failed` (a tensor outside tolerance), `not compared`
    (with the reason), or the target's failure on it: `crashed`, `hung`, `refused`, `unstable`."""

    position: int  # in topological order
    id: int
    name: str
    op: str  # Type-version
    line: int | None
    status: str
    reason: str | None = None
    tensors: list[TensorResult] = field(default_factory=list)

    @property
    def diverged(self) -> bool:
        return self.status in ("failed", "crashed", "hung", "unstable")

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "id": self.id, "name": self.name, "op": self.op, "line": self.line,
                "status": self.status, "reason": self.reason,
                "tensors": [{"key": t.key, **t.diff.to_json()} for t in self.tensors]}


@dataclass
class Report:
    model: str
    target: str
    mode: str  # "layers", "whole", "dumps" or "models" (two IRs, `two_models`)
    layers: list[LayerResult] = field(default_factory=list)
    outputs: list[LayerResult] = field(default_factory=list)  # whole mode: one record per model output
    bisect: LayerResult | None = None  # whole mode with bisect: the first layer found diverging
    bisect_note: str | None = None
    steps: int = 0  # whole mode over the steps of a stateful model: how many (its records are step by step)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # what the reader needs to weigh the verdicts

    @property
    def records(self) -> list[LayerResult]:
        return self.layers if self.mode != "whole" else self.outputs

    @property
    def first_divergence(self) -> LayerResult | None:
        if self.bisect is not None:
            return self.bisect
        return next((r for r in self.records if r.diverged), None)

    @property
    def ok(self) -> bool:
        return not any(r.diverged for r in self.records) and self.bisect is None

    @property
    def gap(self) -> str | None:
        """Why a comparison without a divergence still says too little to pass: nothing was
        compared (the target refused everything), or a reference dump's tensors are missing from
        the dump judged (another runtime's names, perhaps). None when it says enough."""
        judged = [r for r in self.records if r.status not in ("not compared", "refused")]
        if not judged:
            return "nothing was compared"
        if self.mode == "dumps":
            missing = sum(1 for r in self.records if r.status == "not compared" and r.reason == _MISSING)
            if missing:
                return (f"{missing} tensor{'s' if missing != 1 else ''} of the reference "
                        f"{'are' if missing != 1 else 'is'} not in {self.target} (the keys are "
                        f'"<layer name>:<port id>"; another runtime may name its tensors otherwise)')
        return None

    @property
    def passed(self) -> bool:
        """No divergence, and enough compared to say so (the exit status of `compare`)."""
        return self.ok and self.gap is None

    def to_json(self) -> dict[str, Any]:
        first = self.first_divergence
        return {"model": self.model, "target": self.target, "mode": self.mode, "ok": self.ok, "gap": self.gap,
                "seconds": round(self.seconds, 3),
                "first_divergence": None if first is None else {"id": first.id, "name": first.name, "op": first.op},
                "records": [r.to_json() for r in self.records],
                "bisect": None if self.bisect is None else self.bisect.to_json(), "bisect_note": self.bisect_note,
                "notes": self.notes}

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            out[r.status] = out.get(r.status, 0) + 1
        return out


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
    outer = compiled.layers

    def hold(layer: Layer, _inputs: tuple, outputs: tuple) -> None:
        if outer.get(layer.id) is layer:  # a layer of a body is reported renamed: not ours
            for pos, value in enumerate(outputs):
                if value is not None and (keep is None or (layer.id, pos) in keep):
                    values[(layer.id, pos)] = value

    compiled.run(feeds, hook=hold, precision=precision, decompression=decompression)
    for spec, array in zip(compiled.inputs, compiled.feed_arrays(feeds)):
        values[(spec.layer.id, 0)] = array
    for lid in compiled.order:
        layer = compiled.layers[lid]
        if layer.type == "Const":
            values[(lid, 0)] = layer.const_value
    return values


# --- layer by layer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batching:
    """How many layers go into one target model: at most `layers`, and at most `feed_bytes` of
    fed values (a batch that would pass it is closed before the layer that would)."""

    layers: int = 256
    feed_bytes: int = 256 << 20


def compare_layers(compiled: CompiledModel, feeds: Any, target: Target, tolerances: Tolerances, *,
                   values: dict[Source, np.ndarray] | None = None, batching: Batching = Batching(),
                   progress: Callable[[int, int | None], None] | None = None) -> Report:
    """Every layer of `compiled` run alone on `target`, fed irscatter's values of its inputs."""
    start = time.perf_counter()
    values = reference_values(compiled, feeds) if values is None else values
    report = Report(compiled.model.source, target.describe(), "layers")
    tolerances = at_device_precision(target, tolerances)
    candidates = []
    kept = _kept_in_f32(compiled, tolerances.precision)
    for position, lid in enumerate(lid for lid in compiled.order if compiled.layers[lid].type not in BOUNDARY):
        record = _record(compiled, lid, position)
        reason = _no_standalone_form(compiled, lid, values) or (
            f"the device keeps it in f32 within the model, but run alone it computes it in {tolerances.precision}: "
            "--whole judges it" if lid in kept else None)
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


def _record(compiled: CompiledModel, lid: int, position: int) -> LayerResult:
    layer, op = compiled.layers[lid], compiled.ops[lid]
    return LayerResult(position, lid, layer.name, f"{op.type_name}-{op.version}", layer.line, "pending")


def _kept_in_f32(compiled: CompiledModel, precision: str) -> frozenset[int]:
    """The layers a target inferring in f16 or bf16 keeps in f32 (`runtime/precision.py`): run
    alone they lose what kept them (an Exp whose sum would overflow), so alone they say nothing."""
    if precision not in ("f16", "bf16"):
        return frozenset()
    return kept_in_f32(GraphView(compiled.order, compiled.layers, compiled.sources, compiled.infos), precision)


def _no_standalone_form(compiled: CompiledModel, lid: int, values: Mapping[Source, np.ndarray]) -> str | None:
    layer = compiled.layers[lid]
    if layer.type in _NO_STANDALONE_FORM:
        return _NO_STANDALONE_FORM[layer.type]
    domain = compiled.ops[lid].domain
    if domain not in ("opset", "extension"):  # OpenVINO's plugins register their internal ops as `extension`
        return f"its op belongs to the {domain} opset, which the target does not have"
    for src in compiled.sources[lid]:
        if src is not None and src not in values:
            return "irscatter did not compute one of its inputs"
    if not any((lid, pos) in values for pos in range(len(layer.outputs))):
        return "irscatter did not compute its outputs"
    return None


def _batches(records: list[LayerResult], compiled: CompiledModel, values: Mapping[Source, np.ndarray],
             batching: Batching) -> Iterable[list[LayerResult]]:
    batch: list[LayerResult] = []
    size = 0
    for record in records:
        fed = sum(values[src].nbytes for src in compiled.sources[record.id] if src is not None)
        if batch and (len(batch) >= batching.layers or size + fed > batching.feed_bytes):
            yield batch
            batch, size = [], 0
        batch.append(record)
        size += fed
    if batch:
        yield batch


class _LayerRunner:
    """Runs batches of layers on the target, halving a batch that fails."""

    def __init__(self, compiled: CompiledModel, values: dict[Source, np.ndarray], target: Target,
                 tolerances: Tolerances, folder: Path) -> None:
        self.compiled, self.values, self.target, self.tolerances, self.folder = (
            compiled, values, target, tolerances, folder)
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
            key = tensor_key(self.compiled, (record.id, pos))
            want = self.values[(record.id, pos)]
            record.tensors.append(TensorResult(key, diff(got, want, self.tolerances.for_tensor(key, want.dtype))))
        for record in batch:
            record.status = "failed" if any(not t.diff.passed for t in record.tensors) else "passed"

    def _write(self, batch: list[LayerResult]) -> tuple[Path, dict[str, np.ndarray], list[tuple[LayerResult, int]]]:
        compiled, values = self.compiled, self.values
        writer = IRWriter("layers")
        feeds: dict[str, np.ndarray] = {}
        results: list[tuple[LayerResult, int]] = []
        for record in batch:
            lid = record.id
            layer = compiled.layers[lid]
            sources = []
            for i, src in enumerate(compiled.sources[lid]):
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
            inputs = [typed(compiled, values, src) for src in compiled.sources[lid]]
            outputs = [typed(compiled, values, (lid, pos)) for pos in range(len(layer.outputs))]
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
    info = compiled.infos[src]
    return (compiled.layers[src[0]].type == "Const" or info.value is not None
            or info.etype.is_packed)


# --- the whole model ----------------------------------------------------------------------------


def compare_whole(compiled: CompiledModel, feeds: Any, target: Target, tolerances: Tolerances, *,
                  bisect: bool = False, values: dict[Source, np.ndarray] | None = None,
                  xml: str | Path | None = None) -> Report:
    """The model file as the target compiles it, its outputs against irscatter's; with
    `bisect`, then the first layer whose value diverges. `xml` runs another file of the same
    graph on the target instead (the model with marks added to its rt_info, say)."""
    start = time.perf_counter()
    values = reference_values(compiled, feeds, keep=needed(compiled, every=bisect)) if values is None else values
    report = Report(compiled.model.source, target.describe(), "whole")
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
    report.outputs = [_judged_output(compiled, i, values[compiled.sources[spec.layer.id][0]], got, names, tolerances,
                                     spec.name) for i, spec in enumerate(compiled.outputs)]
    if bisect and not report.ok:
        with tempfile.TemporaryDirectory(prefix="irscatter-bisect-") as folder:
            report.bisect, report.bisect_note = _bisect(compiled, values, target, tolerances, Path(folder))
    report.seconds = time.perf_counter() - start
    return report


def _failed_outputs(compiled: CompiledModel, failure: TargetFailure) -> list[LayerResult]:
    """One record per output of a model the target failed on as a whole."""
    return [_output_record(compiled, i, failure.kind, failure.message) for i in range(len(compiled.outputs))]


def _judged_output(compiled: CompiledModel, i: int, want: np.ndarray, got: Sequence[np.ndarray],
                   names: list[list[str]], tolerances: Tolerances, key: str) -> LayerResult:
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
    src = compiled.sources[spec.layer.id][0]
    record.tensors.append(TensorResult(key, diff(theirs, want, tolerances.for_tensor(tensor_key(compiled, src),
                                                                                      want.dtype))))
    record.status = "passed" if record.tensors[0].diff.passed else "failed"
    return record


def compare_steps(compiled: CompiledModel, steps: Sequence[Mapping[str, Any]], target: Any, tolerances: Tolerances,
                  *, precision: str | None = None, decompression: str | None = None) -> Report:
    """A stateful model run step after step, as the target compiles it: irscatter's variables
    and the target's infer request each carried from one step to the next, every output of
    every step against irscatter's (the records in step order, keyed `step<k>/<output>`), so
    the first divergence says at which step the state first went wrong."""
    start = time.perf_counter()
    report = Report(compiled.model.source, target.describe(), "whole", steps=len(steps))
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
    report.outputs = [_judged_output(compiled, i, ours[i], theirs, names, tolerances, f"step{k}/{spec.name}")
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
    lid, _ = compiled.sources[spec.layer.id][0]
    layer, op = compiled.layers[lid], compiled.ops[lid]
    position = steps(compiled).index(lid) if layer.type not in BOUNDARY else -1
    return LayerResult(position, lid, layer.name, f"{op.type_name}-{op.version}", layer.line, status, reason)


def judge(compiled: CompiledModel, target: Target, tolerances: Tolerances, written: Written,
          values: Mapping[Source, np.ndarray]) -> tuple[list[TensorResult], dict[str, np.ndarray]]:
    """A model written by `extract.write` run on the target, fed irscatter's values of its
    inputs: each output against irscatter's value, and the target's outputs by name. Raises
    the target's `TargetFailure`."""
    feeds = {name: values[src] for src, name in written.input_names.items()}
    got = target.infer(written.xml, feeds)
    by_name = {n: array for theirs, array in zip(target.output_names(written.xml), got) for n in theirs}
    tensors, actual = [], {}
    for src, name in written.output_names.items():
        if name not in by_name:
            continue
        key, want = tensor_key(compiled, src), values[src]
        actual[name] = by_name[name]
        tensors.append(TensorResult(key, diff(by_name[name], want, tolerances.for_tensor(key, want.dtype))))
    return tensors, actual


def _bisect(compiled: CompiledModel, values: dict[Source, np.ndarray], target: Target, tolerances: Tolerances,
            folder: Path) -> tuple[LayerResult | None, str]:
    """The first prefix of the topological order whose cut tensors diverge on the target, by
    halving; returns its last layer (with the tensors that diverged) and a note on the search."""
    order = steps(compiled)
    outcomes: dict[int, LayerResult | None] = {}

    def diverging(end: int) -> bool:
        outcomes[end] = _run_prefix(compiled, values, target, tolerances, order, end,
                                    folder / f"prefix{len(outcomes) + 1}" / "model.xml")
        return outcomes[end] is not None and outcomes[end].status == "failed"

    if not diverging(len(order) - 1):
        note = ("the whole graph as irscatter writes it runs clean on the target; the divergence depends on "
                "something of the original file (its rt_info, or fusions only the full model allows)")
        return None, note
    first = first_holding(-1, len(order) - 1, diverging)
    note = f"{len(outcomes)} prefixes run; the prefix ending at position {first} is the first that diverges"
    return outcomes[first], note


def _run_prefix(compiled: CompiledModel, values: dict[Source, np.ndarray], target: Target, tolerances: Tolerances,
                order: list[int], end: int, xml: Path) -> LayerResult | None:
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


# --- two dumps ----------------------------------------------------------------------------------


_MISSING = "missing from the dump judged"


def compare_dumps(target: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], tolerances: Tolerances,
                  names: Sequence[str] = ("A", "B")) -> Report:
    """Two saved sets of tensors (from any runtime), key by key: `target` judged against
    `reference`. A key on one side only is listed as not compared."""
    report = Report(f"{names[1]} (reference)", f"{names[0]}", "dumps")
    keys = list(reference) + [k for k in target if k not in reference]
    for position, key in enumerate(keys):
        record = LayerResult(position, position, key, "", None, "pending")
        if key not in target:
            record.status, record.reason = "not compared", _MISSING
        elif key not in reference:
            record.status, record.reason = "not compared", f"only in {names[0]}"
        else:
            want = np.asarray(reference[key])
            tensor = TensorResult(key, diff(np.asarray(target[key]), want, tolerances.for_tensor(key, want.dtype)))
            record.tensors.append(tensor)
            record.status = "passed" if tensor.diff.passed else "failed"
        report.layers.append(record)
    return report


# --- the printed report --------------------------------------------------------------------------

_HEADER = ("pos", "layer", "op", "tensor", "verdict", "max abs", "max rel", "cosine", "ulps", "bad")
_VERDICT = {"passed": "ok", "failed": "FAIL", "not compared": "skip", "crashed": "CRASH", "hung": "HUNG",
            "refused": "refused", "unstable": "UNSTABLE"}


def table(report: Report, every: bool = False) -> str:
    """The report as an aligned table in topological order: the records that diverged (or,
    with `every`, all), the first divergence marked, then one summary line."""
    first = report.first_divergence
    rows: list[tuple[str, ...]] = []
    notes: list[str] = []
    for record in report.records:
        if not every and record.status == "passed":
            continue
        if not every and record.status == "not compared":
            continue  # counted in the summary; --all lists them with their reasons
        mark = "> " if record is first else "  "
        pos = "" if record.position < 0 or report.mode == "dumps" else str(record.position)
        tensors = record.tensors if (every or record.status != "failed") else [
            t for t in record.tensors if not t.diff.passed]
        if not tensors:
            rows.append((mark + pos, record.name, record.op, "", _VERDICT[record.status], "", "", "", "", ""))
            if record.reason:
                notes.append(f"{record.name}: {record.reason}")
            continue
        for t in tensors:
            d = t.diff
            rows.append((mark + pos, record.name, record.op, t.key.rpartition(":")[2] if report.mode != "dumps" else "",
                         _VERDICT["passed" if d.passed else "failed"] if record.status in ("passed", "failed")
                         else _VERDICT[record.status],
                         _number(d.max_abs), _number(d.max_rel), _number(d.cosine, 6), _number(d.max_ulps, 0),
                         f"{d.mismatches}/{d.count}" if d.problem is None else d.problem))
            if not d.passed:
                notes.append(f"{t.key}: {d.summary()}")
            mark = "  "
    lines = []
    if rows:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_HEADER)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(_HEADER, widths)).rstrip())
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines += notes
    if report.mode in ("dumps", "models") and not every:  # what one side lacks, named (--all gives each a row)
        unmatched: dict[str, list[str]] = {}
        for r in report.records:
            if r.status == "not compared":
                unmatched.setdefault(r.reason or "not compared", []).append(r.name)
        for reason, names in unmatched.items():
            more = f", ... ({len(names) - 8} more; --all lists every one)" if len(names) > 8 else ""
            counted = f" ({len(names)})" if report.mode == "models" else ""
            lines.append(f"{reason}{counted}: {', '.join(names[:8])}{more}")
    if report.bisect_note:
        lines.append(f"bisect: {report.bisect_note}")
    lines += report.notes
    lines.append(summary_line(report))
    return "\n".join(lines)


def summary_line(report: Report) -> str:
    counts = report.counts()
    what = {"layers": "layer", "whole": "output", "dumps": "tensor", "models": "layer"}[report.mode] + (
        "s" if len(report.records) != 1 else "")
    done = ", ".join(f"{n} {status}" for status, n in counts.items()) or "nothing to compare"
    head = (f"{len(report.records)} {what} against {report.target} in {report.seconds:.2f} s: {done}"
            if report.mode not in ("dumps", "models") else
            f"{len(report.records)} {what}, {report.target} judged against {report.model}"
            + (f" in {report.seconds:.2f} s" if report.mode == "models" else "") + f": {done}")
    first = report.first_divergence
    if first is None:
        gap = report.gap
        return head + (f"; no divergence, but {gap}" if gap else "; no divergence")
    where = f" (line {first.line})" if first.line else ""
    label = f'layer {first.id} "{first.name}" ({first.op}){where}' if report.mode != "dumps" else f'"{first.name}"'
    if report.mode == "models":
        bad = next((t.key for t in first.tensors if not t.diff.passed), first.name)
        label = f'tensor "{bad}" of B\'s {label}'
    if report.mode == "whole" and report.bisect is None:
        output = first.tensors[0].key if first.tensors else first.name
        return (head + f'; output "{output}" of {label} diverges'
                + ("" if report.bisect_note or report.steps else "; --bisect looks for the first layer that does"))
    found = "first diverging layer (bisect)" if report.bisect is not None else "first divergence"
    return head + f"; {found}: {label}"


def _number(value: float | None, digits: int = 3) -> str:
    if value is None:
        return ""
    if digits == 0:
        return f"{value:.0f}"
    return f"{value:.{digits}g}" if digits != 6 else f"{value:.6f}"
