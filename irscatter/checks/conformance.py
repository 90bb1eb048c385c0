"""Conformance checking: every finding about an IR in one pass.

`validate()` loads what can be loaded (a defect in one port, layer, edge or constant is
recorded and the element left out), then checks the wiring, resolves every layer to its
op (type/opset, attributes, input and output counts), looks for unconnected inputs, cycles
and layers no Result depends on, and runs shape and type inference over every layer whose
inputs are known, comparing the result with each port's declared precision and dims. A
layer whose check fails contributes one finding and its outputs become unknown, so one
defect does not cascade into findings downstream.

Codes are stable: the label of the rule that failed (`same-element-type`, `C19`,
`declared-shape`, `dangling-edge`, ...). Severity `error` means OpenVINO would refuse the
model or irscatter cannot run it as written; `warning` means it can, but something is off
(a layer nothing uses, an op irscatter cannot check).
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from irscatter.checks.analysis import analyze
from irscatter.errors import MESSAGE_LIMIT, FileAccessError, IRError, elide
from irscatter.findings import Finding
from irscatter.ir.graph import Model
from irscatter.ir.loader import read_model_collecting
from irscatter.ops.common import strict as strict_mode


@dataclass
class Report:
    """The findings about one model file, in the order they were found."""

    file: str
    findings: list[Finding] = field(default_factory=list)
    # With `validate(..., strict=True)`: the strict-mode findings (also in `findings`), each a
    # warning that the model relies on behaviour the spec leaves undefined.
    strict_findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "ok": self.ok,  # no error
            "passed": self.ok and not self.strict_findings,  # what `validate`'s exit status says
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "strict": len(self.strict_findings),
            "findings": [finding_record(f) for f in self.findings],
        }


def finding_line(f: Finding, file: str) -> str:
    """One finding as one line, in the style of irscatter's error messages."""
    where = file + (f":{f.line}" if f.line is not None else "") + (f":{f.column}" if f.column is not None else "")
    subject = (f"{f.layer}" + (f" {f.port}" if f.port else "") + ": ") if f.layer else (f"{f.port}: " if f.port else "")
    return elide(f"{where}: {f.severity}: {subject}{f.message.strip()} [{f.code}]", MESSAGE_LIMIT)


def finding_record(f: Finding) -> dict[str, Any]:
    layer = None
    if f.layer is not None:
        # a resolved op's version is a number (Const -> 1); an unresolved layer keeps its raw
        # version attribute under "opset" (a Frobnicate in "opset8"), so neither field mixes kinds
        resolved = f.layer.version.isascii() and f.layer.version.isdigit()
        layer = {"id": f.layer.id, "name": f.layer.name, "type": f.layer.type,
                 "version": int(f.layer.version) if resolved else None,
                 "opset": None if resolved else (f.layer.version or None)}
    return {"severity": f.severity, "code": f.code, "message": f.message, "layer": layer, "port": f.port,
            "line": f.line, "column": f.column}


def from_error(e: IRError, severity: str = "error", default_code: str = "invalid") -> Finding:
    return Finding(severity, e.label or default_code, e.message, e.layer, e.port, e.line, e.column)  # type: ignore[arg-type]


def validate(model: Model | str | os.PathLike, bin_path: str | os.PathLike | None = None, *,
             strict: bool = False) -> Report:
    """Every finding about `model` (a loaded Model, or the path of its `.xml`).

    `strict=True` adds the strict-mode findings that the model's constants decide without a
    run (duplicate constant scatter indices, a constant negative index where the spec expects
    none, ...; see `irscatter.checks.strict`), also listed in `Report.strict_findings`. Those
    that depend on fed values show only in `run(..., strict=True)`."""
    if isinstance(model, Model):
        return _with_strict(Report(model.source), model, (), strict)
    try:
        loaded, problems = read_model_collecting(model, bin_path)
    except FileAccessError:
        raise  # nothing to judge: the file itself could not be read
    except IRError as e:  # the document as a whole is not an IR: one finding says why
        return Report(str(model), [from_error(e, default_code=e.kind)])
    loaded_badly = {p.layer.id for p in problems if p.layer is not None}
    report = Report(loaded.source, [from_error(p, default_code="load") for p in problems])
    return _with_strict(report, loaded, loaded_badly, strict)


def _with_strict(report: Report, model: Model, loaded_badly: Collection[int | str], strict: bool) -> Report:
    """The report with the checks after loading added, and in strict mode their strict findings."""
    if not strict:
        report.findings += check_model(model, loaded_badly)
        return report
    collector = strict_mode.Collector()
    with strict_mode.collecting(collector):
        report.findings += analyze(model, collect=True, loaded_badly=loaded_badly, strict=True).findings
    report.findings += collector.findings
    report.strict_findings = collector.findings
    return report


# --- the checks --------------------------------------------------------------------------------


def check_model(model: Model, loaded_badly: Collection[int | str] | None = None) -> list[Finding]:
    """The checks after loading (the same pass that compiling runs, recording every finding);
    layers in `loaded_badly` were already reported by the loader."""
    return analyze(model, collect=True, loaded_badly=loaded_badly or ()).findings
