"""One model judged, inside its case's own process.

In order: `validate` (an error makes the case `invalid`); the model run by irscatter on its
inputs (`inputs.npz`, else drawn at random); the whole model on the target against irscatter's
outputs (`compare_whole`); the source framework's `expected.npz`, when there is one, against
irscatter's outputs. A target that diverges is then asked layer by layer (`compare_layers`, or
a bisection when no layer diverges alone) for the first layer at fault, and the model is
reduced to a reproducer (`reduce`) in the campaign's output folder.

What comes back is a dict of `CaseRecord` fields; `target_failed` tells the worker that the
target crashed or hung on the way, so that it starts a fresh one for the next case.
"""

from __future__ import annotations

import math
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.api import read_model, validate
from irscatter.checks.conformance import finding_line
from irscatter.debug import compare, reduce
from irscatter.debug.campaign.task import Task
from irscatter.debug.extract import file_safe
from irscatter.debug.tolerances import Tolerances
from irscatter.debug.verdicts import Report
from irscatter.errors import IRError
from irscatter.runtime import inputs as model_inputs
from irscatter.runtime import steps
from irscatter.runtime.interpreter import CompiledModel
from irscatter.targets.protocol import Target

_TARGET_TROUBLE = ("crashed", "hung", "unstable")


def judge_model(work: tuple[Task, Target]) -> dict[str, Any]:
    task, target = work
    xml = Path(task.folder) / "model.xml"
    found = validate(xml)
    if found.errors:
        more = f" (and {len(found.errors) - 1} more errors)" if len(found.errors) > 1 else ""
        return {"status": "invalid", "message": finding_line(found.errors[0], str(xml)) + more}
    try:
        compiled = read_model(xml).compile()
        feeds = model_feeds(compiled, Path(task.folder), task.settings.seed)
    except IRError as e:
        return {"status": "failed", "message": f"irscatter: {e}"}
    record: dict[str, Any] = {"ops": op_types(compiled), "target_detail": target.describe()}
    tolerances = task.settings.tolerances()
    try:
        if steps.has_steps(feeds):
            record.update(_judge_steps(compiled, feeds, target, tolerances, Path(task.folder)))
            return record
        values = compare.reference_values(compiled, feeds)
    except IRError as e:
        return {**record, "status": "failed", "message": f"irscatter: {e}"}
    whole = compare.compare_whole(compiled, feeds, target, tolerances, values=values)
    record.update(verdict(whole))
    ours = {spec.name: values[compiled.graph.returned(spec.layer.id)] for spec in compiled.outputs}
    _check_expected(record, ours, Path(task.folder), tolerances)
    if record["status"] == "diverged":
        _locate(record, compiled, feeds, values, target, tolerances)
        if task.settings.reduce:
            _reduce(record, task, compiled, values, target, tolerances)
    return record


def model_feeds(compiled: CompiledModel, folder: Path, seed: int) -> dict[str, np.ndarray]:
    """The folder's `inputs.npz`, else a draw of every input as `run --random` draws it (a
    dynamic dimension at its lower bound, or 1)."""
    given = folder / "inputs.npz"
    if given.is_file():
        return model_inputs.load_npz(given)
    shapes = model_inputs.default_shapes(compiled.inputs, {})
    return model_inputs.random_inputs(compiled.inputs, seed, shapes, model_inputs.accepted_ranges(compiled))


def op_types(compiled: CompiledModel) -> list[str]:
    return sorted({compiled.graph.op(lid).label() for lid in compiled.graph.kernels})


def verdict(report: Report) -> dict[str, Any]:
    """A whole-model report as a case's status, worst metric and message."""
    records = report.records
    trouble = [r for r in records if r.status in _TARGET_TROUBLE]
    failed = [r for r in records if r.status == "failed"]
    judged = [r for r in records if r.status in ("passed", "failed")]
    out: dict[str, Any] = {"target_failed": bool(trouble)}
    worst = max(((t.diff.worst_ratio if t.diff.worst_ratio is not None else (0.0 if t.diff.passed else math.inf), t.key)
                 for r in records for t in r.tensors), default=None)
    if worst is not None:
        out["metric"], out["tensor"] = worst
    if trouble:
        out.update(status="diverged", message=f"the target {trouble[0].status}: {trouble[0].reason}")
    elif failed:
        bad = [t for r in failed for t in r.tensors if not t.diff.passed]
        out.update(status="diverged", message="; ".join(f"{t.key}: {t.diff.summary()}" for t in bad[:3]))
    elif not judged:
        reasons = {_last_line(r.reason) for r in records if r.reason}
        out.update(status="refused", message="; ".join(sorted(reasons)) or "nothing was compared")
    else:
        out["status"] = "passed"
    return out


def _last_line(text: str) -> str:
    """A runtime's message by its last line, which says why (the lines above say where)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else text


def _judge_steps(compiled: CompiledModel, feeds: dict[str, np.ndarray], target: Target,
                 tolerances: Tolerances, folder: Path) -> dict[str, Any]:
    """A stateful model over the steps its inputs give (`step<k>/NAME`), its state carried on
    both sides; judged as a whole only (layer by layer and reduce look at one run)."""
    if not callable(getattr(target, "infer_steps", None)):
        return {"status": "refused", "message": "the inputs are keyed by step, and the target cannot run steps"}
    per_step = steps.split_steps(feeds, 1)
    out = verdict(compare.compare_steps(compiled, per_step, target, tolerances))
    ours = {f"step{k}/{name}": value
            for k, (_, outputs) in enumerate(steps.run_steps(compiled.new_request(), per_step))
            for name, value in outputs.items()}
    _check_expected(out, ours, folder, tolerances)
    return out


def _check_expected(record: dict[str, Any], ours: dict[str, np.ndarray], folder: Path,
                    tolerances: Tolerances) -> None:
    """The framework's outputs (`expected.npz`) against irscatter's, by `run --expected`'s rule:
    a model the target computes as irscatter does may still have been converted wrongly."""
    path = folder / "expected.npz"
    if not path.is_file():
        return
    results = model_inputs.compare_outputs(ours, model_inputs.load_npz(path), rtol=tolerances.rtol,
                                           atol=tolerances.atol, precision=tolerances.precision)
    bad = [c for c in results if c.compared and not c.ok]
    if not bad:
        return
    said = "expected.npz differs from irscatter: " + "; ".join(f"{c.name}: {c.detail}" for c in bad[:3])
    if record["status"] == "passed":
        record.update(status="expected differs", message=said, tensor=f"expected.npz:{bad[0].name}")
    else:
        record["message"] = f"{record.get('message') or ''}; {said}".lstrip("; ")


def _locate(record: dict[str, Any], compiled: CompiledModel, feeds: dict[str, np.ndarray],
            values: Mapping[compare.Source, np.ndarray], target: Target, tolerances: Tolerances) -> None:
    """The first layer at fault: each layer alone on the target, else a bisection over prefixes."""
    layers = compare.compare_layers(compiled, feeds, target, tolerances, values=values)
    record["target_failed"] = record.get("target_failed") or any(r.status in _TARGET_TROUBLE for r in layers.layers)
    first, how = layers.first_divergence, "each layer alone on the target"
    if first is None:
        first = compare.compare_whole(compiled, feeds, target, tolerances, bisect=True, values=values).bisect
        how = "bisection; no layer diverges alone"
    if first is not None:
        record["layer"], record["layer_op"] = f"{first.name} ({first.op})", first.op
        record["message"] = f"{record.get('message') or ''}; first diverging layer ({how}): {first.name}".lstrip("; ")


def _reduce(record: dict[str, Any], task: Task, compiled: CompiledModel, values: Mapping[compare.Source, np.ndarray],
            target: Target, tolerances: Tolerances) -> None:
    check = reduce.TargetCheck(compiled, target, tolerances)
    reduction = reduce.reduce_model(compiled, values, check)
    if not reduction.reproducible:
        record["message"] = f"{record.get('message') or ''}; not reduced: {reduction.note}".lstrip("; ")
        return
    folder = Path(task.out) / "reproducers" / f"{file_safe(task.name)}-{task.identity[:8]}"
    if folder.exists():
        shutil.rmtree(folder)  # an earlier judgement of the same model
    settings = task.settings
    given = Path(task.folder) / "inputs.npz"
    feeds = ["--inputs", str(given)] if given.is_file() else ["--random", "--seed", str(settings.seed)]
    command = shlex.join(["irscatter", "reduce", str(Path(task.folder) / "model.xml"), *feeds, "-o", str(folder),
                          "--target", settings.target, "--target-precision", settings.precision])
    reduce.write_reproducer(compiled, values, reduction, check, folder, command)
    record["reproducer"] = str(folder)
