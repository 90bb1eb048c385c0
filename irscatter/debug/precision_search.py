"""Which layers must stay in f32 for a model to pass on a device inferring in f16 or bf16.

A device told to infer in a lower precision computes most layers in it, and a model whose
values leave that precision's range or need the digits it drops fails there: a MatMul past
f16's 65504 that a normalization would bring back, a long sum of large terms. OpenVINO keeps a
layer in f32 when its `<rt_info>` carries the mark `runtime.precision.F32_MARK` names (the CPU
plugin keeps such a node's own precision whatever the inference precision). The search finds a
small set of layers to mark, as Polygraphy's `debug precision` does for TensorRT:

1. the model as it is runs on the target, its outputs judged against irscatter's f32 values by
   the one rule of `metrics`, at the presets of the precision the target ran: when they pass,
   nothing needs marking (and a target that ran f32 has nothing a mark could change);
2. every candidate marked (each layer that runs a kernel and makes a float value): when even
   that fails, no set of marks helps;
3. the shortest prefix of the candidates, in the order they run, whose marks pass (halving);
   then the shortest window ending where that prefix ends that still passes (halving again):
   a stretch of the graph around where the values go wrong;
4. the window pruned: its marks dropped in halves, then one at a time, as long as the outputs
   still pass.

Each trial is a new file: the model's own document with the marks added to those layers'
`<rt_info>` (`ir.writer.with_layer_rt_info`) beside a link to its weights, so the target reads
what the user's file says in every other respect. The target is reached through the `Target`
protocol alone. The halvings take it that marking more layers passes whenever marking fewer
does; where that does not hold, the set found still passes (every trial that kept it passed),
but it may not be the smallest.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.debug.compare import compare_whole
from irscatter.debug.extract import first_holding
from irscatter.debug.tolerances import Tolerances
from irscatter.debug.verdicts import Report
from irscatter.errors import UsageError
from irscatter.ir.writer import with_layer_rt_info
from irscatter.runtime.interpreter import CompiledModel
from irscatter.runtime.precision import F32_MARK, keeps_f32
from irscatter.targets.protocol import Target

Source = tuple[int, int]
_LINEAR_PASS_LIMIT = 200  # marks left after the halvings, above which none is dropped one at a time


@dataclass
class Search:
    """What the search found: `status` is "passes" (the model passes as it is), "marked" (it
    passes with `marks`), or "impossible" (no set of marks makes it pass, `note` says why)."""

    target: str  # the target's own description
    asked: str  # the precision asked for
    ran: str  # the precision the target says it ran
    status: str
    marks: tuple[int, ...] = ()  # layer ids, in the order they run
    candidates: int = 0
    trials: int = 0
    seconds: float = 0.0
    steps: list[str] = field(default_factory=list)  # what each stage found, for the report
    baseline: Report | None = None  # the model as it is
    last: Report | None = None  # the trial with the marks found (or every mark, when none helps)
    note: str = ""


def candidates(compiled: CompiledModel) -> list[int]:
    """The layers a mark can keep in f32: each that runs a kernel and makes a float value, in the
    order they run, less those the file already marks."""
    graph = compiled.graph
    return [lid for lid in graph.kernels
            if not keeps_f32(graph.layers[lid].rt_info)
            and any(graph.infos[src].etype.is_float for src in graph.outputs_of(lid))]


def f32_values(compiled: CompiledModel, feeds: Any) -> dict[Source, np.ndarray]:
    """irscatter's f32 value of each model input and output, keyed by tensor, as `compare_whole`
    takes them."""
    outputs = compiled.run(feeds, precision=None)
    values = {(spec.layer.id, 0): array for spec, array in zip(compiled.inputs, compiled.feed_arrays(feeds))}
    for spec in compiled.outputs:
        values[compiled.graph.returned(spec.layer.id)] = outputs[spec.name]
    return values


def write_marked(compiled: CompiledModel, marks: Iterable[int], xml: str | Path, *, link_weights: bool = False) -> Path:
    """The model's document with `marks` (layer ids) carrying `F32_MARK` in their rt_info, at
    `xml`, its weights beside it under the same stem: copied, or with `link_weights` linked
    (a trial's file, read once and thrown away)."""
    source = compiled.model.xml_path
    if source is None:
        raise UsageError("keeping layers in f32 writes the model's own file anew: give a model read from a file")
    xml = Path(xml)
    marked = with_layer_rt_info(Path(source).read_bytes(), source, {lid: F32_MARK for lid in marks})
    xml.parent.mkdir(parents=True, exist_ok=True)
    xml.write_bytes(marked)
    weights = compiled.model.bin_path
    if weights is not None:
        _place(Path(weights), xml.with_suffix(".bin"), link_weights)
    return xml


def _place(weights: Path, where: Path, link: bool) -> None:
    if link:
        try:
            os.symlink(weights.resolve(), where)
            return
        except OSError:
            pass  # (a file system without links: a copy does)
    shutil.copyfile(weights, where)


class _Trials:
    """Runs each set of marks on the target once, and remembers the verdict."""

    def __init__(self, compiled: CompiledModel, feeds: Any, target: Target, tolerances: Tolerances,
                 values: Mapping[Source, np.ndarray], folder: Path,
                 progress: Callable[[int, int | None], None] | None) -> None:
        self.compiled, self.feeds, self.target, self.tolerances = compiled, feeds, target, tolerances
        self.values, self.folder, self.progress = values, folder, progress
        self.done: dict[frozenset[int], Report] = {}

    def run(self, marks: Sequence[int]) -> Report:
        key = frozenset(marks)
        if key not in self.done:
            xml = write_marked(self.compiled, marks, self.folder / f"trial{len(self.done) + 1}" / "model.xml",
                               link_weights=True)
            self.done[key] = compare_whole(self.compiled, self.feeds, self.target, self.tolerances,
                                           values=self.values, xml=xml)
            if self.progress is not None:
                self.progress(len(self.done), None)
        return self.done[key]

    def passes(self, marks: Sequence[int]) -> bool:
        return self.run(marks).passed


def search(compiled: CompiledModel, feeds: Any, target: Target, tolerances: Tolerances, *,
           progress: Callable[[int, int | None], None] | None = None) -> Search:
    """The layers of `compiled` to keep in f32 for its outputs on `target` (at the precision
    `tolerances.precision` asks for) to pass against irscatter's f32 values; `progress(trials,
    None)` after each trial run."""
    start = time.perf_counter()
    values = f32_values(compiled, feeds)
    ran_precision = getattr(target, "ran_precision", None)
    ran = ran_precision() if callable(ran_precision) else tolerances.precision
    found = Search(target.describe(), tolerances.precision, ran, "passes")
    pool = candidates(compiled)
    found.candidates = len(pool)
    with tempfile.TemporaryDirectory(prefix="irscatter-keep-f32-") as folder:
        trials = _Trials(compiled, feeds, target, tolerances, values, Path(folder), progress)
        _search(found, trials, pool)
        found.trials = len(trials.done)
    found.seconds = time.perf_counter() - start
    return found


def _search(found: Search, trials: _Trials, pool: list[int]) -> None:
    found.baseline = found.last = trials.run(())
    if found.baseline.passed:
        found.note = ("the target ran f32, where a mark changes nothing" if found.ran == "f32"
                      else f"its outputs pass at {found.ran} as they are")
        return
    found.status = "impossible"
    if found.ran == "f32":
        found.note = ("the target ran f32, where a mark changes nothing, and its outputs still depart from "
                      "irscatter's: that is no matter of precision (irscatter compare finds the layer)")
        return
    if not pool:
        found.note = "no layer of the model makes a float value a mark could keep in f32"
        return
    found.last = trials.run(pool)
    if not found.last.passed:
        found.note = f"even with all {len(pool)} layers that make float values kept in f32 the outputs fail"
        return
    end = first_holding(0, len(pool), lambda k: trials.passes(pool[:k]))
    width = first_holding(0, end, lambda w: trials.passes(pool[end - w:end]))
    found.steps.append(f"the first {end} of {len(pool)} layers kept pass, and the last {width} of those alone")
    marks = _pruned(trials, pool[end - width:end])
    if len(marks) < width:
        found.steps.append(f"pruned to {len(marks)}")
    found.status, found.marks, found.last = "marked", tuple(marks), trials.run(marks)


def _pruned(trials: _Trials, marks: list[int]) -> list[int]:
    """`marks` with every half, quarter, ... and then (when few are left) every single mark
    dropped that the outputs pass without."""
    chunk = len(marks) // 2
    while chunk >= 1 and (chunk > 1 or len(marks) <= _LINEAR_PASS_LIMIT):
        i = 0
        while i < len(marks) and len(marks) > 1:
            rest = marks[:i] + marks[i + chunk:]
            if rest and trials.passes(rest):
                marks = rest
            else:
                i += chunk
        chunk = min(chunk // 2, len(marks) // 2) if chunk > 1 else 0
    return marks


def verify(compiled: CompiledModel, feeds: Any, target: Target, tolerances: Tolerances, xml: str | Path) -> Report:
    """The written file run on the target, its outputs against irscatter's f32 values."""
    return compare_whole(compiled, feeds, target, tolerances, values=f32_values(compiled, feeds), xml=xml)


# --- the report ----------------------------------------------------------------------------------


def layer_line(compiled: CompiledModel, lid: int) -> str:
    """How a report names a marked layer: id, name, Type-version and line."""
    layer = compiled.graph.layers[lid]
    where = f" (line {layer.line})" if layer.line else ""
    return f'layer {lid} "{layer.name}" ({compiled.graph.op(lid).label()}){where}'


def verdict(report: Report) -> str:
    """One line on a whole-model comparison: what fails, or how many outputs pass."""
    failing = [f'output "{t.key}": {t.diff.summary()}' for r in report.outputs for t in r.tensors
               if not t.diff.passed]
    failing += [f'output of "{r.name}": the target {r.status}' + (f" ({r.reason})" if r.reason else "")
                for r in report.outputs if r.status in ("crashed", "hung", "unstable", "refused")]
    if failing:
        return "; ".join(failing)
    if report.gap:
        return f"no divergence, but {report.gap}"
    return f"{len(report.outputs)} output{'s' if len(report.outputs) != 1 else ''} within tolerance"


def summary(found: Search, compiled: CompiledModel) -> list[str]:
    """The search as lines of text: the layers to keep, or why none are needed or none help."""
    trials = f"{found.trials} trial{'s' if found.trials != 1 else ''} in {found.seconds:.1f} s"
    lines = [f"target: {found.target}"]
    if found.status == "marked":
        lines.append(f"keep in f32: {len(found.marks)} of the {found.candidates} layers that make float values")
        lines += [f"  {layer_line(compiled, lid)}" for lid in found.marks]
    elif found.status == "passes":
        lines.append(f"nothing needs keeping in f32: {found.note}")
    else:
        lines.append(f"no set of layers kept in f32 makes the outputs pass: {found.note}")
    if found.baseline is not None:
        lines.append(f"as it is: {verdict(found.baseline)}")
    if found.status == "impossible" and found.last is not None and found.last is not found.baseline:
        lines.append(f"every layer kept: {verdict(found.last)}")
    lines.append("; ".join([trials, *found.steps]))
    return lines


__all__ = ["Search", "candidates", "f32_values", "layer_line", "search", "summary", "verdict", "verify",
           "write_marked"]
