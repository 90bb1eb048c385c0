"""An IR converted from ONNX against the ONNX file itself on onnxruntime, tensor by tensor.

irscatter runs the IR once, keeping every tensor (`compare.reference_values`), and is the
reference; onnxruntime runs the ONNX model once (`targets.onnxruntime`, in a worker process)
with every intermediate value it can return as an extra output. The two graphs are not the same
graph: OpenVINO's ONNX frontend splits some nodes (a Conv with a bias becomes a Convolution and
an Add), fuses others (x * Sigmoid(x) becomes Swish) and folds what depends on constants alone.
What it keeps is names: the output port of the layer that computes an ONNX value carries that
value's name in its tensor names (an IR port's `names`). Tensors are matched through them and
nothing else, so what cannot be matched is listed rather than guessed: ONNX values the
conversion fused away, and IR tensors no ONNX value stands for (the Convolution before its bias
Add).

Every matched tensor is judged by the one rule (`metrics.diff`, the presets of `Tolerances`),
layer by layer in irscatter's topological order, so the first divergence is the earliest layer
whose value departs from onnxruntime's. Both sides see the same feeds: irscatter's, given to
onnxruntime by ONNX input name.

A crash or a hang of onnxruntime is a finding of the report (`failure`), never the end of the
caller; nothing is then compared.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.debug.compare import Source, reference_values
from irscatter.debug.extract import tensor_key
from irscatter.debug.tolerances import Tolerances
from irscatter.debug.verdicts import LayerResult, Report, TensorResult, table
from irscatter.errors import UsageError
from irscatter.metrics import diff
from irscatter.runtime.interpreter import CompiledModel
from irscatter.targets.onnxruntime import OnnxRuntimeTarget
from irscatter.targets.openvino import exactly_as
from irscatter.targets.worker import TargetFailure

REFERENCE = "irscatter"
_NO_NAME = "none of its tensor names is an ONNX value"
_LISTED = 8  # names listed per line of the printed report, unless every one is asked for


@dataclass
class OnnxTensorResult(TensorResult):
    onnx: str = ""  # the ONNX value it is matched with


@dataclass
class OnnxReport(Report):
    """A `Report` (mode "layers", one record per IR layer) with what the matching found: how
    many ONNX values were compared, those left without an IR tensor of their name, the IR
    tensors without an ONNX value, the values onnxruntime cannot return, and onnxruntime's
    failure when it crashed, hung or refused the model."""

    onnx: str = ""
    reference: str = REFERENCE
    matched: int = 0
    onnx_values: int = 0
    unmatched_onnx: list[str] = field(default_factory=list)
    unmatched_ir: list[str] = field(default_factory=list)
    skipped_onnx: list[tuple[str, str]] = field(default_factory=list)
    failure: tuple[str, str] | None = None  # (kind, message) of the run that failed

    @property
    def ok(self) -> bool:
        return self.failure is None and super().ok

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        for record, entry in zip(self.records, out["records"]):
            for tensor, item in zip(record.tensors, entry["tensors"]):
                item["onnx_value"] = getattr(tensor, "onnx", None)
        out.update({"reference": self.reference, "onnx": self.onnx, "matched": self.matched,
                    "onnx_values": self.onnx_values, "unmatched_onnx": self.unmatched_onnx,
                    "unmatched_ir": self.unmatched_ir,
                    "skipped_onnx": [{"name": n, "reason": r} for n, r in self.skipped_onnx],
                    "failure": None if self.failure is None else {"kind": self.failure[0],
                                                                  "message": self.failure[1]}})
        return out


def compare_onnx(compiled: CompiledModel, feeds: Any, onnx_path: str | os.PathLike, tolerances: Tolerances = Tolerances(),
                 *, runtime: OnnxRuntimeTarget | None = None, values: Mapping[Source, np.ndarray] | None = None,
                 timeout: float = 300.0) -> OnnxReport:
    """The IR in `compiled` run by irscatter on `feeds` against the ONNX model it was converted
    from, run by onnxruntime (`runtime`, or one started and closed here) on the same feeds.

    Raises `TargetFailure` when the ONNX file cannot be described (onnxruntime or onnx missing,
    an unreadable file) and `UsageError` when an ONNX input has no IR input of its name; a
    failure of onnxruntime's run is the report's `failure`."""
    start = time.perf_counter()
    values = reference_values(compiled, feeds) if values is None else values
    own = runtime is None
    runtime = OnnxRuntimeTarget(timeout=timeout) if runtime is None else runtime
    try:
        graph = runtime.graph(onnx_path)
        report = OnnxReport(compiled.model.source, runtime.describe(), "layers", onnx=os.fspath(onnx_path),
                            target_name=getattr(runtime, "name", "onnxruntime"),
                            onnx_values=len(graph["values"]), skipped_onnx=[tuple(s) for s in graph["skipped"]])
        pairs = _match(compiled, values, graph, report)
        fed = _onnx_feeds(compiled, values, graph["inputs"])
        try:
            got = runtime.values(onnx_path, fed, sorted({name for _, _, name in pairs}))
        except TargetFailure as failure:
            report.failure = (failure.kind, failure.message)
            for record in report.layers:
                if record.status == "pending":
                    record.status, record.reason = "not compared", f"onnxruntime {failure.kind}"
            got = None
    finally:
        if own:
            runtime.close()
    if got is not None:
        _judge(compiled, values, pairs, got, tolerances, report.sides)
    report.seconds = time.perf_counter() - start
    return report


def _match(compiled: CompiledModel, values: Mapping[Source, np.ndarray], graph: dict[str, Any],
           report: OnnxReport) -> list[tuple[LayerResult, int, str]]:
    """The records of the layers to report, in topological order, and the (record, output
    position, ONNX value) pairs to judge; fills in what matches nothing."""
    order = {name: n for n, (name, _, _) in enumerate(graph["values"])}
    found: set[str] = set()
    pairs: list[tuple[LayerResult, int, str]] = []
    ir = compiled.graph
    for lid in ir.order:
        layer = ir.layers[lid]
        if layer.type == "Result":
            continue
        matched = [(pos, sorted((n for n in port.names if n in order), key=order.__getitem__))
                   for pos, port in enumerate(layer.outputs)]
        boundary = layer.type in ("Parameter", "Const")
        if boundary and not any(names for _, names in matched):
            continue  # a weight or an input no ONNX node makes: nothing to judge
        record = LayerResult(len(report.layers), lid, layer.name, ir.op(lid).label(), layer.line,
                             "pending")
        report.layers.append(record)
        judged = 0
        for pos, names in matched:
            found.update(names)
            if (lid, pos) not in values:
                continue
            if not names:
                report.unmatched_ir.append(tensor_key(compiled, (lid, pos)))
            pairs.extend((record, pos, name) for name in names)
            judged += len(names)
        if not judged:
            record.status = "not compared"
            record.reason = _NO_NAME if not any(names for _, names in matched) else "irscatter did not compute it"
    report.matched = len({name for _, _, name in pairs})
    report.unmatched_onnx = [name for name, _, _ in graph["values"] if name not in found]
    return pairs


def _onnx_feeds(compiled: CompiledModel, values: Mapping[Source, np.ndarray], inputs: list[str]) -> dict[str, np.ndarray]:
    """irscatter's value of each input, under the ONNX input's name that the IR input carries."""
    fed = {}
    for name in inputs:
        spec = next((s for s in compiled.inputs if name in s.names or name == s.name), None)
        if spec is None:
            raise UsageError(f'ONNX input "{name}" is no input of the IR (its inputs: '
                             f"{', '.join(s.name for s in compiled.inputs)}); was the IR converted from this model?")
        fed[name] = values[(spec.layer.id, 0)]
    return fed


def _judge(compiled: CompiledModel, values: Mapping[Source, np.ndarray], pairs: list[tuple[LayerResult, int, str]],
           got: dict[str, np.ndarray], tolerances: Tolerances, sides: tuple[str, str]) -> None:
    for record, pos, name in pairs:
        key, want = tensor_key(compiled, (record.id, pos)), np.asarray(values[(record.id, pos)])
        theirs = exactly_as(np.asarray(got[name]), want.dtype)  # an i32 the frontend chose for an ONNX i64
        names = tuple(compiled.graph.layers[record.id].outputs[pos].names)
        judged = diff(theirs, want, tolerances.for_tensor(key, want.dtype), sides)
        record.tensors.append(OnnxTensorResult(key, judged, names, onnx=name))
    for record in {id(r): r for r, _, _ in pairs}.values():
        record.status = "failed" if any(not t.diff.passed for t in record.tensors) else "passed"


# --- the printed report --------------------------------------------------------------------------


def onnx_table(report: OnnxReport, every: bool = False) -> str:
    """`verdicts.table`'s rows, led by which side is which, followed by what was not matched
    and a summary naming the ONNX value of the first divergence."""
    lines = [f"{report.reference} runs {Path(report.model).name} (the reference); {report.target_name} "
             f"({report.target}) runs {Path(report.onnx).name}; tensors matched by ONNX value name"]
    lines += table(report, every).splitlines()[:-1]
    limit = None if every else _LISTED
    renamed = [f"{t.key} = {t.onnx}" for r in report.records for t in r.tensors  # where the names differ
               if not t.diff.passed and isinstance(t, OnnxTensorResult) and t.onnx != r.name]
    lines += _listed("diverging tensors by ONNX value", renamed, limit)
    lines += _listed("ONNX values without an IR tensor of their name (fused or folded by the conversion)",
                     report.unmatched_onnx, limit)
    lines += _listed("IR tensors without an ONNX value", report.unmatched_ir, limit)
    lines += _listed("ONNX values onnxruntime cannot return",
                     [f"{name} ({why})" for name, why in report.skipped_onnx], limit)
    lines.append(onnx_summary(report))
    return "\n".join(lines)


def _listed(what: str, names: list[str], limit: int | None) -> list[str]:
    if not names:
        return []
    shown = names if limit is None else names[:limit]
    more = f", ... ({len(names) - len(shown)} more; --all lists every one)" if len(shown) < len(names) else ""
    return [f"{what} ({len(names)}): {', '.join(shown)}{more}"]


def onnx_summary(report: OnnxReport) -> str:
    counts = ", ".join(f"{n} {status}" for status, n in report.counts().items()) or "nothing to compare"
    head = (f"{len(report.layers)} layer{'s' if len(report.layers) != 1 else ''}, {report.target_name} judged "
            f"against {report.reference} in {report.seconds:.2f} s: {counts}; {report.matched} of {report.onnx_values} "
            "ONNX values matched")
    if report.failure is not None:
        kind, message = report.failure
        return head + f"; onnxruntime {kind}, so nothing was compared: {message}"
    first = report.first_divergence
    if first is None:
        gap = report.gap
        return head + (f"; no divergence, but {gap}" if gap else "; no divergence")
    where = f" (line {first.line})" if first.line else ""
    onnx = [t.onnx for t in first.tensors if not t.diff.passed and isinstance(t, OnnxTensorResult)]
    value = f', ONNX value "{onnx[0]}"' if onnx else ""
    return head + f'; first divergence: layer {first.id} "{first.name}" ({first.op}){where}{value}'
