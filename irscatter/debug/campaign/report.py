"""What a campaign says: a table of the cases that did not pass, a closing line, the HTML page,
and the difference between two campaigns' databases.

The page is plain HTML in the style of `compare --report` (no chart, so it needs nothing
installed): pass rates by op type and by model, the worst divergences, every case that did not
pass with a link to its reproducer, and the command that made it. Every string from a model or
a message is escaped.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from irscatter.debug.campaign.store import STATUSES, CaseRecord
from irscatter.debug.html import PAGE_STYLE

_WORST = 20  # divergences listed by how far they are outside their tolerance


def _metric(value: float | None) -> str:
    if value is None:
        return ""
    return "inf" if math.isinf(value) else f"{value:.3g}"


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [header, *rows]]


def counts(records: Sequence[CaseRecord]) -> dict[str, int]:
    found = {s: sum(1 for r in records if r.status == s) for s in STATUSES}
    return {s: n for s, n in found.items() if n}


def summary_line(records: Sequence[CaseRecord], target: str, seconds: float) -> str:
    resumed = sum(1 for r in records if r.resumed)
    judged = len(records) - resumed
    done = ", ".join(f"{n} {s}" for s, n in counts(records).items()) or "no case"
    what = "signatures" if any(r.kind == "op" for r in records) else "models"
    rate = f"; {judged / seconds * 60:.1f} {what}/minute" if judged and seconds > 0 else ""
    again = f" ({resumed} already judged in the database)" if resumed else ""
    return f"{len(records)} cases against {target} in {seconds:.1f} s{again}: {done}{rate}"


def table(records: Sequence[CaseRecord], every: bool = False) -> str:
    """The cases that did not pass (or, with `every`, all), one row each."""
    shown = [r for r in records if every or not r.passed]
    if not shown:
        return ""
    rows = [(r.status, r.name, r.layer or "", _metric(r.metric), f"{r.seconds:.1f}", r.reproducer or "")
            for r in shown]
    lines = _aligned(("status", "case", "first diverging layer", "metric", "seconds", "reproducer"), rows)
    notes = [f"{r.name}: {_first_line(r.message)}" for r in shown if r.message and not r.passed]
    return "\n".join(lines + notes)


def _first_line(text: str | None, limit: int = 300) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --- two campaigns ------------------------------------------------------------------------------


@dataclass
class Change:
    case: str
    kind: str
    before: str | None  # the status in the first database (None: not there)
    after: str | None
    change: str  # "broke", "fixed", "changed", "new", "gone", "same"
    layer: str | None = None  # the first diverging layer in the second, else the first

    def to_json(self) -> dict[str, str | None]:
        return {"case": self.case, "kind": self.kind, "before": self.before, "after": self.after,
                "change": self.change, "layer": self.layer}


def diff(first: Sequence[CaseRecord], second: Sequence[CaseRecord]) -> list[Change]:
    """Each case of either campaign (matched by kind and name) and what happened to it."""
    a = {(r.kind, r.name): r for r in first}
    b = {(r.kind, r.name): r for r in second}
    out = []
    for key in sorted(set(a) | set(b)):
        old, new = a.get(key), b.get(key)
        if old is None or new is None:
            change = "new" if old is None else "gone"
        elif old.status == new.status:
            change = "same"
        elif old.passed:
            change = "broke"
        elif new.passed:
            change = "fixed"
        else:
            change = "changed"
        layer = (new.layer if new is not None and new.layer else old.layer if old is not None else None)
        out.append(Change(key[1], key[0], old.status if old else None, new.status if new else None, change, layer))
    return out


_ORDER = ("broke", "fixed", "changed", "new", "gone")


def diff_table(changes: Sequence[Change], names: Sequence[str]) -> str:
    shown = sorted((c for c in changes if c.change != "same"), key=lambda c: (_ORDER.index(c.change), c.case))
    lines = _aligned(("change", "case", names[0], names[1], "first diverging layer"),
                     [(c.change, c.case, c.before or "-", c.after or "-", c.layer or "") for c in shown]) if shown else []
    tally = {k: sum(1 for c in changes if c.change == k) for k in (*_ORDER, "same")}
    lines.append(f"{tally['broke']} broke, {tally['fixed']} fixed, {tally['changed']} changed status, "
                 f"{tally['new']} new, {tally['gone']} gone, {tally['same']} unchanged")
    return "\n".join(lines)


# --- the page ------------------------------------------------------------------------------------


def write_html(records: Sequence[CaseRecord], path: str | os.PathLike, *, command: str, title_line: str) -> Path:
    path = Path(path)
    path.write_text(render(records, base=path.parent, command=command, title_line=title_line), encoding="utf-8")
    return path


def render(records: Sequence[CaseRecord], *, base: Path, command: str, title_line: str) -> str:
    passed = all(r.passed for r in records)
    targets = sorted({r.target_detail or r.target for r in records})
    versions = sorted({r.version for r in records if r.version})
    items = [("target", ", ".join(targets) or "-"), ("irscatter", ", ".join(versions) or "-"),
             ("cases", str(len(records))),
             ("counts", ", ".join(f"{n} {s}" for s, n in counts(records).items()) or "none")]
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>irscatter campaign</title>",
        f"<style>{_STYLE}</style></head>",
        "<body>",
        "<h1>irscatter campaign</h1>",
        f'<p class="verdict {"clean" if passed else "diverged"}">{_e(title_line)}</p>',
        '<dl class="summary">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items) + "</dl>",
        "<h2>Pass rate by op type</h2>",
        _by_op(records),
        "<h2>Pass rate by model</h2>",
        _by_model(records, base),
        f"<h2>Worst divergences (at most {_WORST})</h2>",
        _worst(records, base),
        "<h2>Every case that did not pass</h2>",
        _failures(records, base),
        "<h2>Command</h2>",
        f"<pre>{_e(command)}</pre>",
        "</body></html>",
        "",
    ])


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _table(header: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]]) -> str:
    """`rows` are (css class, cells already escaped)."""
    if not rows:
        return '<p class="none">none</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(f'<tr class="{cls}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>" for cls, cells in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _rate(passed: int, total: int) -> str:
    return f"{100 * passed / total:.0f}%" if total else "-"


def _by_op(records: Sequence[CaseRecord]) -> str:
    """Per op type: the cases holding it, how many of those passed, and how many it was the
    first diverging layer of."""
    held: dict[str, list[CaseRecord]] = {}
    for r in records:
        for op in r.ops:
            held.setdefault(op, []).append(r)
    blamed: dict[str, int] = {}
    for r in records:
        if r.layer_op:
            blamed[r.layer_op] = blamed.get(r.layer_op, 0) + 1
    rows = []
    for op, cases in sorted(held.items(), key=lambda kv: (sum(c.passed for c in kv[1]) / len(kv[1]), kv[0])):
        good = sum(c.passed for c in cases)
        rows.append(("passed" if good == len(cases) else "failed",
                     [_e(op), str(len(cases)), str(good), _rate(good, len(cases)), str(blamed.get(op, 0))]))
    return _table(("op", "cases holding it", "passed", "pass rate", "first diverging layer of"), rows)


def _by_model(records: Sequence[CaseRecord], base: Path) -> str:
    models = [r for r in records if r.kind == "model"]
    if models:
        rows = [(_css(r), [_e(r.name), _e(r.status), _e(r.layer or ""), _e(_metric(r.metric)), f"{r.seconds:.1f}",
                           _e("" if r.peak_mb is None else f"{r.peak_mb:.0f}"), _link(r.reproducer, base)])
                for r in models]
        return _table(("model", "status", "first diverging layer", "metric", "seconds", "peak MB", "reproducer"), rows)
    held: dict[str, list[CaseRecord]] = {}
    for r in records:
        for holder in r.holders:
            held.setdefault(holder, []).append(r)
    rows = []
    for model, cases in sorted(held.items()):
        good = sum(c.passed for c in cases)
        bad = ", ".join(sorted({c.ops[0] for c in cases if not c.passed and c.ops}))
        rows.append(("passed" if good == len(cases) else "failed",
                     [_e(model), str(len(cases)), str(good), _rate(good, len(cases)), _e(bad)]))
    return _table(("model", "signatures it holds", "passed", "pass rate", "op types that did not pass"), rows)


def _worst(records: Sequence[CaseRecord], base: Path) -> str:
    measured = [(r.metric, r) for r in records if not r.passed and r.metric is not None]
    ranked = [r for _, r in sorted(measured, key=lambda pair: -pair[0])][:_WORST]
    rows = [(_css(r), [_e(r.name), _e(r.status), _e(_metric(r.metric)), _e(r.tensor or ""), _e(r.layer or ""),
                       _link(r.reproducer, base)]) for r in ranked]
    return _table(("case", "status", "error / tolerance", "tensor", "first diverging layer", "reproducer"), rows)


def _failures(records: Sequence[CaseRecord], base: Path) -> str:
    rows = [(_css(r), [_e(r.name), _e(r.status), _e(r.layer or ""), _link(r.reproducer, base),
                       f'<span class="message">{_e(r.message or "")}</span>'])
            for r in records if not r.passed]
    return _table(("case", "status", "first diverging layer", "reproducer", "message"), rows)


def _css(record: CaseRecord) -> str:
    return "passed" if record.passed else "failed"


def _link(folder: str | None, base: Path) -> str:
    if not folder:
        return ""
    target = Path(folder) / "README.md" if (Path(folder) / "README.md").is_file() else Path(folder) / "model.xml"
    try:
        href = os.path.relpath(target, base.resolve())
    except ValueError:  # (another drive)
        href = str(target)
    return f'<a href="{_e(Path(href).as_posix())}">{_e(Path(folder).name)}</a>'


_STYLE = PAGE_STYLE + """
table { border-collapse: collapse; font-size: 13px; width: 100%; }
th { background: #f3f4f6; text-align: left; padding: 6px 8px; border-bottom: 2px solid #ccc; white-space: nowrap; }
td { padding: 4px 8px; border-bottom: 1px solid #eee; vertical-align: top; word-break: break-word; }
tr.failed td { background: #fdecec; }
tr.failed td:nth-child(2) { color: #b71c1c; font-weight: 600; }
.message { color: #444; font-size: 12px; white-space: pre-wrap; }
p.none { color: #777; }
"""
