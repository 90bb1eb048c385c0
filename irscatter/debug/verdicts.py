"""What a comparison found, and how it reads: a verdict per tensor (`TensorResult`), per layer
or output (`LayerResult`), the whole `Report` with its first divergence, and the report as an
aligned text table (`table`, `summary_line`). Every way of comparing (`compare`, `onnx_compare`,
`two_models`, `dump_compare`) makes a `Report`, and `html` draws one as a page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irscatter.metrics import TensorDiff

# Why a tensor of the reference dump was not compared: the dump judged does not hold it.
MISSING = "missing from the dump judged"


@dataclass
class TensorResult:
    key: str  # "<layer name>:<port id>"
    diff: TensorDiff
    names: tuple[str, ...] = ()  # the port's tensor names, as the framework named the tensor

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "names": list(self.names), **self.diff.to_json()}


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
                "tensors": [t.to_json() for t in self.tensors]}


@dataclass
class Report:
    """What a comparison found. `model` and `target` say what ran (the target as it describes
    itself: runtime, version, device, precision); `reference_name` and `target_name` are the two
    sides as every value in the report is named ("irscatter" and "openvino:CPU", or two files)."""

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
    reference_name: str = "irscatter"
    target_name: str = "target"

    @property
    def sides(self) -> tuple[str, str]:
        """(target, reference), as `metrics.diff` takes them."""
        return self.target_name, self.reference_name

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
            missing = sum(1 for r in self.records if r.status == "not compared" and r.reason == MISSING)
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
                "sides": {"reference": self.reference_name, "target": self.target_name},
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


# --- the printed report --------------------------------------------------------------------------

_HEADER = ("pos", "layer", "op", "tensor", "verdict", "max abs", "max rel", "cosine", "ulps", "bad")
VERDICT = {"passed": "ok", "failed": "FAIL", "not compared": "skip", "crashed": "CRASH", "hung": "HUNG",
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
            rows.append((mark + pos, record.name, record.op, "", VERDICT[record.status], "", "", "", "", ""))
            if record.reason:
                notes.append(f"{record.name}: {record.reason}")
            continue
        for t in tensors:
            d = t.diff
            rows.append((mark + pos, record.name, record.op, t.key.rpartition(":")[2] if report.mode != "dumps" else "",
                         VERDICT["passed" if d.passed else "failed"] if record.status in ("passed", "failed")
                         else VERDICT[record.status],
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
    head = (f"{len(report.records)} {what}, {report.target_name} judged against {report.reference_name} "
            f"({report.target}) in {report.seconds:.2f} s: {done}"
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


def side_names(first: str, second: str) -> tuple[str, str]:
    """Two files as a report names its sides: by file name, or by path where the names are one."""
    a, b = Path(first).name, Path(second).name
    return (a, b) if a != b else (str(first), str(second))


def listed(names: Sequence[str], most: int = 8) -> str:
    """Names for one line of a note: the first `most`, and how many more."""
    more = f", ... ({len(names) - most} more)" if len(names) > most else ""
    return ", ".join(names[:most]) + more
