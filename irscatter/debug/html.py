"""A comparison report as one self-contained HTML page: a chart of every layer's error along the
topological order, the model's graph with each layer coloured by its verdict (`graph_drawing`: laid
out by Graphviz when installed, by a layered layout of its own otherwise; why not Model Explorer
is said there), a sortable table of every layer, the summary and the command that made it.

The page opens with no network: the chart is an SVG drawn by matplotlib (an optional
dependency, `pip install irscatter[report]`) and embedded inline, the styles and the few lines
of sorting script are inline too. Every string that comes from the model is escaped.

The chart's measure is a layer's worst tensor in units of its own tolerance: the largest
|target - irscatter| / (atol * scale + rtol * |irscatter|) over its elements, so that 1 is the
tolerance of every layer alike. Values that cannot be put on that scale (an integer tensor that
differs, a NaN on one side only, a shape that differs, a layer the target crashed or hung on)
are drawn above the measured ones, each with a marker of its own.
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.debug import graph_drawing
from irscatter.debug.tolerances import type_name
from irscatter.debug.verdicts import VERDICT, LayerResult, Report, TensorResult, summary_line
from irscatter.errors import UsageError
from irscatter.ir.graph import Graph
from irscatter.metrics import TensorDiff

INSTALL_HINT = "pip install irscatter[report]"
# What the target did to a layer when it gave no values to judge.
_TARGET_FAILURES = ("crashed", "hung", "unstable", "refused")
_LABEL_CHARS = 48  # a longer layer name is cut in the chart's one label; the table has it whole


def require_matplotlib() -> None:
    """Refuse early, before any comparison runs, when the chart cannot be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(f"a report's chart is drawn with matplotlib, which is not installed: {INSTALL_HINT}") from None


def write(report: Report, path: str | Path, *, command: str, graph: Graph | None = None) -> Path:
    path = Path(path)
    path.write_text(render(report, command=command, graph=graph), encoding="utf-8")
    return path


def render(report: Report, *, command: str, graph: Graph | None = None) -> str:
    """The page's HTML text; nothing is written. With the `graph` the records' layer ids refer
    to, the page draws it, each layer coloured by its verdict."""
    require_matplotlib()
    rows = _rows(report)
    title = f"irscatter compare: {Path(report.model).name}"
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_STYLE}{graph_drawing.GRAPH_STYLE}</style></head>",
        "<body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="verdict {"clean" if report.passed else "diverged"}">{_e(summary_line(report))}</p>',
        _summary(report),
        "<h2>Error along the topological order</h2>",
        f'<figure class="chart">{_chart_svg(report)}<figcaption>{_e(_caption(report))}</figcaption></figure>',
        graph_drawing.section(report, graph) if graph is not None else "",
        _table(report, rows),
        "<h2>Command</h2>",
        f"<pre>{_e(command)}</pre>",
        f"<script>{_SCRIPT}{graph_drawing.GRAPH_SCRIPT}</script>",
        "</body></html>",
        "",
    ])


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


# --- what each layer measures ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Point:
    """One layer on the chart. `kind` is "measured" (its ratio is on the scale), "differs" (an
    exact tensor or a shape that differs), "nonfinite" (NaN or infinity on one side only), or
    the target's failure on the layer ("crashed", "hung", "unstable", "refused")."""

    position: int
    ratio: float
    kind: str
    failed: bool


def _tensor_ratio(d: TensorDiff) -> tuple[float, str]:
    if d.problem is not None or (d.tolerance is None and not d.passed):
        return math.inf, "differs"
    if d.tolerance is None or d.worst_ratio is None:
        return 0.0, "measured"  # an exact tensor that is equal
    if math.isfinite(d.worst_ratio):
        return d.worst_ratio, "measured"
    # infinite: a NaN or infinity on one side, or an error where the tolerance allows none
    return math.inf, "nonfinite" if d.nonfinite else "differs"


def _layer_point(record: LayerResult) -> _Point | None:
    if record.status in _TARGET_FAILURES:
        return _Point(record.position, math.inf, record.status, record.diverged)
    if not record.tensors:
        return None  # not compared: the table gives the reason
    ranked = {"measured": 0, "nonfinite": 1, "differs": 2}
    ratio, kind = max((_tensor_ratio(t.diff) for t in record.tensors), key=lambda rk: (ranked[rk[1]], rk[0]))
    return _Point(record.position, ratio, kind, record.status == "failed")


# --- the chart ------------------------------------------------------------------------------------

# (kind, marker, colour, legend) for the points drawn above the measured ones
_OFF_SCALE = [
    ("differs", "s", "#b2182b", "exact values or shape differ"),
    ("nonfinite", "^", "#b2182b", "NaN or infinity on one side"),
    ("crashed", "X", "#6a3d9a", "{target} crashed"),
    ("hung", "X", "#e08214", "{target} hung"),
    ("unstable", "D", "#6a3d9a", "{target} unstable"),
    ("refused", "x", "#777777", "{target} refused"),
]


def _chart_svg(report: Report) -> str:
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    records = list(report.records) + ([report.bisect] if report.bisect is not None else [])
    points = [p for p in (_layer_point(r) for r in records) if p is not None]
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    FigureCanvasAgg(fig)  # the non-interactive backend, set on this figure only: no display, no global state
    ax = fig.add_subplot()
    if points:
        _draw_points(ax, points, report.target_name)
        _mark_first_divergence(ax, report)
    else:
        ax.text(0.5, 0.5, "no layer was compared", ha="center", va="center", transform=ax.transAxes)
        ax.set_yscale("log")
    ax.set_xlabel(_x_label(report))
    ax.set_ylabel("worst error / allowed error")
    ax.grid(True, which="major", axis="y", color="#dddddd", linewidth=0.6)
    buffer = io.StringIO()
    # text stays text (smaller, and the browser's font); fixed ids and no date: the same report gives the same page
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "irscatter"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]  # the XML declaration and doctype do not belong inside HTML


def _scale(points: list[_Point]) -> tuple[float, float]:
    """The bottom (where ratios of 0 are drawn) and the top (where off-scale points are) of the
    chart's logarithmic axis, around the measured ratios and always around the tolerance line."""
    measured = [p.ratio for p in points if p.kind == "measured" and p.ratio > 0]
    low = min(measured, default=1e-3)
    high = max(measured, default=1.0)
    bottom = 10.0 ** math.floor(math.log10(min(low, 1e-3))) / 10
    top = 10.0 ** math.ceil(math.log10(max(high, 10.0))) * 10
    return bottom, top


def _draw_points(ax, points: list[_Point], target: str) -> None:
    bottom, top = _scale(points)
    ordered = sorted(points, key=lambda p: p.position)
    at = [min(max(p.ratio, bottom), top) for p in ordered]
    ax.set_yscale("log")
    ax.set_ylim(bottom / 2, top * 3)
    # a faint line through the measured ratios shows how error builds up; it breaks at the
    # off-scale points, whose height is a marker's place and not a value
    traced = [a if p.kind == "measured" else math.nan for p, a in zip(ordered, at)]
    ax.plot([p.position for p in ordered], traced, color="#c6d4e3", linewidth=0.8, zorder=1)
    tolerance = ax.axhline(1.0, color="#444444", linestyle="--", linewidth=1.0, zorder=2)
    tolerance.set_label("tolerance (error = allowed)")  # a legend entry (set apart from the error labels' keyword)
    ax.axhspan(top / 1.8, top * 3, color="#f6e8e8", zorder=0)
    for failed, colour, label in ((False, "#4c78a8", "within tolerance"), (True, "#d62728", "outside tolerance")):
        chosen = [(p.position, a) for p, a in zip(ordered, at) if p.kind == "measured" and p.failed == failed]
        if chosen:
            ax.scatter(*zip(*chosen), s=14, color=colour, label=label, zorder=3, linewidths=0)
    for kind, marker, colour, label in _OFF_SCALE:
        off_scale = [p.position for p in ordered if p.kind == kind]
        if off_scale:
            ax.scatter(off_scale, [top] * len(off_scale), s=46, marker=marker, color=colour,
                       label=label.format(target=target), zorder=4)
    _label_scale(ax, bottom, top)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _label_scale(ax, bottom: float, top: float) -> None:
    """Ticks at the decades (at most about eight, 1 always among them), with the two ends
    named for what is drawn there: ratios of 0, and the points off the scale."""
    from matplotlib.ticker import NullLocator

    low, high = round(math.log10(bottom)), round(math.log10(top))
    step = max(1, math.ceil((high - low) / 8))
    decades = [d for d in range(low + 1, high) if d % step == 0]
    ax.set_yticks([bottom, *(10.0 ** d for d in decades), top],
                  ["0", *(f"$10^{{{d}}}$" for d in decades), "off scale"])
    ax.yaxis.set_minor_locator(NullLocator())


def _mark_first_divergence(ax, report: Report) -> None:
    first = report.first_divergence
    if first is None or first.position < 0:
        return
    ax.axvline(first.position, color="#d62728", linewidth=1.0, linestyle=":", zorder=2)
    name = first.name if len(first.name) <= _LABEL_CHARS else first.name[: _LABEL_CHARS - 1] + "\u2026"
    label = f"first divergence: {name}" + (f" ({first.op})" if first.op else "")
    lo, hi = ax.get_xlim()
    right_half = first.position > (lo + hi) / 2
    # above the plot, where no point can hide it, leaning away from the nearer edge;
    # parse_math off: a layer name holding "$" must stay text, not become a formula
    ax.annotate(label, xy=(first.position, 1.0), xycoords=("data", "axes fraction"),
                xytext=(0, 6), textcoords="offset points", ha="right" if right_half else "left", va="bottom",
                fontsize=9, color="#a50f15", parse_math=False, annotation_clip=False,
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": "#d62728"})


def _x_label(report: Report) -> str:
    if report.mode == "dumps":
        return "tensor, in the order of the reference file"
    return "position in topological order"


def _caption(report: Report) -> str:
    what = {"layers": "Each layer run alone on the target, fed irscatter's values of its inputs.",
            "whole": "The model's outputs as the target computes the whole model"
                     + (", and the first diverging layer found by bisection." if report.bisect else "."),
            "dumps": "Each saved tensor against the reference file's.",
            "models": "Each layer of model B against the layer of model A it matches, both run by irscatter."
            }[report.mode]
    return (f"{what} Each point is a layer's worst tensor: its largest error over the error its tolerance "
            "allows, so 1 is the tolerance line for every layer. Integer tensors that differ, NaN or infinity "
            "on one side only, and layers the target could not run are drawn off scale, at the top.")


# --- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    record: LayerResult
    tensor: TensorResult | None
    first: bool  # the row that marks the first divergence
    bisect: bool  # the layer bisection found, not one of the records


def _columns(report: Report) -> list[tuple[str, bool]]:
    """(heading, sorts as a number), the two sides' values at the worst element headed by
    the sides' names."""
    return [("pos", True), ("layer", False), ("op", False), ("tensor", False), ("shape", False), ("verdict", False),
            ("error / allowed", True), ("max abs", True), ("max rel", True), ("cosine", True), ("ulps", True),
            ("mismatches", True), ("worst at", False), (report.reference_name, True), (report.target_name, True),
            ("reason", False)]


def _rows(report: Report) -> list[_Row]:
    first = report.first_divergence
    rows: list[_Row] = []
    records = [(r, False) for r in report.records] + ([(report.bisect, True)] if report.bisect is not None else [])
    for record, bisect in records:
        marked = record is first
        tensors: Sequence[TensorResult | None] = record.tensors or [None]  # a record of no tensor: one row
        for tensor in tensors:
            rows.append(_Row(record, tensor, marked, bisect))
            marked = False
    return rows


def _table(report: Report, rows: list[_Row]) -> str:
    counts = ", ".join(f"{n} {status}" for status, n in report.counts().items()) or "nothing compared"
    head = "".join(f'<th data-type="{"number" if numeric else "text"}" title="click to sort">{_e(name)}</th>'
                   for name, numeric in _columns(report))
    body = "\n".join(_row_html(report, row) for row in rows)
    return (f'<h2>Every {"output" if report.mode == "whole" else "layer"} ({_e(counts)})</h2>\n'
            '<p class="controls"><label><input type="checkbox" id="only-diverged"> only what did not pass</label> '
            '<span class="hint">click a heading to sort</span></p>\n'
            f'<table id="layers"><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>')


def _row_html(report: Report, row: _Row) -> str:
    record, tensor = row.record, row.tensor
    status = record.status
    if tensor is not None and status in ("passed", "failed"):
        status = "passed" if tensor.diff.passed else "failed"
    classes = [status.replace(" ", "-")] + (["first"] if row.first else [])
    numbered = record.position >= 0 and report.mode != "dumps"
    mark = '<span class="mark" title="first divergence">\u25b6</span> ' if row.first else ""
    tag = ' <span class="tag">bisect</span>' if row.bisect else ""
    cells = [_cell(record.position if numbered else "", record.position if numbered else None, mark),
             _cell(record.name, None, "", tag), _cell(record.op), _cell(_tensor_name(report, tensor)),
             _cell(_shape(tensor)), _cell(VERDICT[status])]
    cells += _number_cells(tensor.diff) if tensor is not None else [_cell("") for _ in range(9)]
    cells.append(_cell(_reason(record, tensor), None))
    anchor = ' id="first-divergence"' if row.first else ""
    return f'<tr class="{" ".join(classes)}"{anchor}>{"".join(cells)}</tr>'


def _cell(text: object, sort: float | int | None = None, before: str = "", after: str = "") -> str:
    """A table cell: the text escaped, `before`/`after` already HTML; `sort` the number it sorts by."""
    key = "" if sort is None else f' data-sort="{_sort_key(sort)}"'
    return f"<td{key}>{before}{_e(text)}{after}</td>"


def _sort_key(value: float | int) -> str:
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _number_cells(d: TensorDiff) -> list[str]:
    ratio, kind = _tensor_ratio(d)
    ratio_text = {"differs": "differs", "nonfinite": "NaN/inf"}.get(kind, _number(ratio))
    bad = f"{d.mismatches}/{d.count}" if d.problem is None else d.problem
    return [_cell(ratio_text, ratio), _cell(_number(d.max_abs), d.max_abs), _cell(_number(d.max_rel), d.max_rel),
            _cell(_number(d.cosine, 6), d.cosine), _cell(_number(d.max_ulps, 0), d.max_ulps),
            _cell(bad, d.mismatches if d.problem is None else None),
            _cell("" if d.worst is None else list(d.worst)), _value_cell(d.worst_reference), _value_cell(d.worst_target)]


def _value_cell(value: Any) -> str:
    """One side's value at the worst element (whatever element the tensor holds: float() says
    whether it is a number), as the summary prints it, sorting as a number."""
    if value is None:
        return _cell("")
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    return _cell(str(value), number)


def _number(value: float | None, digits: int = 3) -> str:
    if value is None:
        return ""
    if digits == 0:
        return f"{value:.0f}" if math.isfinite(value) else str(value)
    return f"{value:.6f}" if digits == 6 else f"{value:.{digits}g}"


def _tensor_name(report: Report, tensor: TensorResult | None) -> str:
    """The tensor's key ("<layer name>:<port id>", an output's name, or a dump's key) and the
    tensor names the framework gave it."""
    if tensor is None:
        return ""
    names = [n for n in tensor.names if n != tensor.key]
    return tensor.key + (f" ({', '.join(names)})" if names else "")


def _shape(tensor: TensorResult | None) -> str:
    if tensor is None:
        return ""
    return f"{list(tensor.diff.shape)} {type_name(np.dtype(tensor.diff.dtype))}"


def _reason(record: LayerResult, tensor: TensorResult | None) -> str:
    """Why the row says what it does: the reason a layer was not compared (or what the target
    did to it), and what differs in a tensor that failed."""
    failed = tensor.diff.summary() if tensor is not None and not tensor.diff.passed else ""
    why = record.reason or (_UNSAID.get(record.status, "") if tensor is None else "")
    return "; ".join(text for text in (why, failed) if text)


# The reason a record without values gives when the comparison gave it none.
_UNSAID = {"not compared": "nothing of it to compare", "refused": "the target refused it",
           "crashed": "the target crashed on it", "hung": "the target did not answer",
           "unstable": "the target's answer changed between two runs"}


# --- the summary ----------------------------------------------------------------------------------


def _summary(report: Report) -> str:
    first = report.first_divergence
    items: list[tuple[str, str]] = [*_sides(report), ("mode", _e(_MODES[report.mode])),
        ("counts", _e(", ".join(f"{n} {s}" for s, n in report.counts().items()) or "nothing compared")),
        ("seconds", f"{report.seconds:.2f}"),
        ("first divergence", _first_divergence(report, first)),
    ]
    if report.bisect_note:
        items.append(("bisect", _e(report.bisect_note)))
    items += [("note", _e(note)) for note in report.notes]
    return '<dl class="summary">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items) + "</dl>"


def _sides(report: Report) -> list[tuple[str, str]]:
    """Which side is which: the reference every value is judged against, and what is judged,
    under the names the table's columns and the reasons give them."""
    if report.mode in ("dumps", "models"):  # two files: the report's model and target name them
        return [("reference", _e(report.model)), ("judged", _e(report.target))]
    judged = report.target_name + (f" ({report.target})" if report.target != report.target_name else "")
    return [("model", _e(report.model)), ("reference", _e(report.reference_name)), ("judged", _e(judged))]


_MODES = {"layers": "layers: each layer alone on the target, fed irscatter's values of its inputs",
          "whole": "whole: the model as the target compiles it, its outputs compared",
          "dumps": "dumps: two files of saved tensors",
          "models": "models: two IRs of one model, tensor by tensor, both run by irscatter"}


def _first_divergence(report: Report, first: LayerResult | None) -> str:
    if first is None:
        return "none"
    where = [f"position {first.position}"] if first.position >= 0 and report.mode != "dumps" else []
    where += [f"layer {first.id}"] if report.mode != "dumps" else []
    where += [f"line {first.line}"] if first.line else []
    op = f" ({_e(first.op)})" if first.op else ""
    found = " (bisect)" if report.bisect is not None else ""
    return (f'<a href="#first-divergence"><code>{_e(first.name)}</code></a>{op}{found}'
            + (f" at {_e(', '.join(where))}" if where else ""))


# --- the page's style and script ------------------------------------------------------------------

# The page, its verdict and its summary, as irscatter's reports (this one, a campaign's) show them.
PAGE_STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f;
       margin: 0 auto; padding: 24px 32px 48px; max-width: 1500px; }
h1 { font-size: 22px; margin: 0 0 6px; word-break: break-all; }
h2 { font-size: 17px; margin: 28px 0 8px; }
.verdict { margin: 0 0 14px; padding: 8px 12px; border-radius: 6px; }
.verdict.clean { background: #e8f4ea; border-left: 4px solid #2e7d32; }
.verdict.diverged { background: #fbeaea; border-left: 4px solid #c62828; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 0; }
dl.summary dt { color: #666; }
dl.summary dd { margin: 0; word-break: break-word; }
pre { background: #f6f8fa; padding: 10px 12px; border-radius: 6px; white-space: pre-wrap; word-break: break-all; }
"""

_STYLE = PAGE_STYLE + """
figure.chart { margin: 0; }
figure.chart svg { width: 100%; max-width: 1200px; height: auto; display: block; }
figcaption { color: #555; font-size: 13px; max-width: 1100px; }
.controls { font-size: 13px; color: #444; }
.hint { color: #888; margin-left: 12px; }
table { border-collapse: collapse; font-size: 13px; width: 100%; }
th { position: sticky; top: 0; background: #f3f4f6; text-align: left; padding: 6px 8px; cursor: pointer;
     border-bottom: 2px solid #ccc; white-space: nowrap; user-select: none; }
th[aria-sort="ascending"]::after { content: " \\25B2"; font-size: 10px; }
th[aria-sort="descending"]::after { content: " \\25BC"; font-size: 10px; }
td { padding: 4px 8px; border-bottom: 1px solid #eee; vertical-align: top; }
td:nth-child(1), td:nth-child(n+7):nth-child(-n+12), td:nth-child(14), td:nth-child(15) { text-align: right;
     font-variant-numeric: tabular-nums; white-space: nowrap; }
td:nth-child(2), td:nth-child(4) { word-break: break-all; min-width: 12em; }
td:nth-child(3), td:nth-child(5), td:nth-child(6), td:nth-child(13) { white-space: nowrap; }
td:nth-child(16) { color: #444; font-size: 12px; max-width: 40em; }
tr.failed td, tr.crashed td, tr.hung td, tr.unstable td { background: #fdecec; }
tr.failed td:nth-child(6), tr.crashed td:nth-child(6), tr.hung td:nth-child(6),
tr.unstable td:nth-child(6) { color: #b71c1c; font-weight: 600; }
tr.refused td, tr.not-compared td { color: #777; }
tr.first td { background: #f9d6d5; border-top: 2px solid #c62828; border-bottom: 2px solid #c62828; }
.mark { color: #c62828; }
.tag { font-size: 11px; background: #eee; border-radius: 3px; padding: 0 4px; }
table.only-diverged tr.passed, table.only-diverged tr.not-compared { display: none; }
"""

# Sorting by a column: numbers by their data-sort value, with empty cells last either way;
# text by its content. The table is marked once the script has run, which the tests look for.
_SCRIPT = """
(function () {
  var table = document.getElementById("layers");
  var body = table.tBodies[0];
  var headings = table.tHead.rows[0].cells;
  function key(row, column, numeric) {
    var cell = row.cells[column];
    if (!numeric) return cell.textContent;
    var text = cell.getAttribute("data-sort");
    return text === null || text === "" ? null : Number(text);
  }
  function sortBy(column, descending) {
    var numeric = headings[column].getAttribute("data-type") === "number";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, column, numeric), y = key(b, column, numeric);
      if (x === null || y === null) return (x === null) - (y === null);
      var order = numeric ? (x > y) - (x < y) : x.localeCompare(y, undefined, {numeric: true});
      return descending ? -order : order;
    });
    var sorted = document.createDocumentFragment();
    rows.forEach(function (row) { sorted.appendChild(row); });
    body.appendChild(sorted);
  }
  Array.prototype.forEach.call(headings, function (heading, column) {
    heading.addEventListener("click", function () {
      var descending = heading.getAttribute("aria-sort") === "ascending";
      Array.prototype.forEach.call(headings, function (h) { h.removeAttribute("aria-sort"); });
      heading.setAttribute("aria-sort", descending ? "descending" : "ascending");
      sortBy(column, descending);
    });
  });
  document.getElementById("only-diverged").addEventListener("change", function (event) {
    table.classList.toggle("only-diverged", event.target.checked);
  });
  table.setAttribute("data-sortable", "ready");
})();
"""
