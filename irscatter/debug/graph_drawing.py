"""The model's graph for a comparison's HTML page, each layer coloured by its verdict, so that a
reader sees where in the network the divergence starts and how far it spreads.

Each drawn node names its layer and Type-version; hovering over it gives its tensors' verdicts
(max abs, ulps), and a click shows them in a panel beside the graph. The page works offline: the
graph is inline SVG, laid out by Graphviz's `dot` when it is on the PATH (an optional program,
never a dependency: the Debian package `graphviz`; the pip package of that name is only a
wrapper around it), and otherwise by a layered layout computed here (`layered_layout`): each
layer on the rank one below its deepest input, ranks ordered by where their inputs stand. `dot`
draws fewer crossings and routes edges around nodes; the layout here is plain but always there.

Why not Google's Model Explorer, which users open models in: it has no reader of OpenVINO's IR
(its own adapters read TFLite, TensorFlow, MLIR, PyTorch's exported programs and its own JSON
graph), so a file of its "node data" (values per node key, coloured by thresholds or a gradient)
would apply to a graph the user cannot open there. Exporting its JSON graph too would mean a
second rendering of the IR to keep true, for a tool the user has to install and run a server for;
the page drawn here needs nothing.

A model of thousands of layers stays readable: Consts are left out (a weight's change shows in
the layer that reads it), a run of passed layers one after another becomes one node, and past
`DRAWN_NODES` only a window around the first divergence is drawn; the caption says what was left.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field

from irscatter.debug.verdicts import VERDICT, LayerResult, Report
from irscatter.ir.graph import Graph, Layer
from irscatter.ir.opsets import version_text

DRAWN_NODES = 400  # more would be a wall of boxes, and slow for the browser and for dot
_DOT_SECONDS = 60.0  # beyond it the page falls back to the layout computed here
_NAME_CHARS = 28  # a longer layer name is cut on its node; the tooltip and panel have it whole

# A record's status as the graph colours it: the target's failures alike, skipped layers apart.
_CATEGORY = {"passed": "passed", "failed": "failed", "crashed": "crashed", "hung": "crashed",
             "unstable": "crashed", "refused": "refused", "not compared": "skipped"}
# (category, fill, border, legend), the most severe last: it wins where one layer has records of several
CATEGORIES = [
    ("not-judged", "#ffffff", "#b0b0b0", "not judged"), ("passed", "#d8eedb", "#5a9e66", "passed"),
    ("skipped", "#f2f2f2", "#9a9a9a", "skipped (not compared)"), ("refused", "#e3e3e3", "#6f6f6f", "refused by the target"),
    ("failed", "#f4a3a0", "#c62828", "failed (outside tolerance)"),
    ("crashed", "#cdb8e6", "#6a3d9a", "crashed, hung or unstable")]
_SEVERITY = {name: rank for rank, (name, *_) in enumerate(CATEGORIES)}
_STYLE_OF = {name: (fill, border) for name, fill, border, _ in CATEGORIES}


@dataclass
class Node:
    """One box of the drawing: a layer, or a run of passed layers drawn as one."""

    title: str
    op: str
    category: str
    layers: list[int] = field(default_factory=list)  # ids, in topological order
    detail: dict = field(default_factory=dict)  # what the panel shows


@dataclass
class View:
    nodes: list[Node]
    edges: list[tuple[int, int]]  # indices into nodes
    notes: list[str]


# --- what is drawn --------------------------------------------------------------------------------


def build_view(graph: Graph, report: Report, cap: int = DRAWN_NODES) -> View:
    results = _results_by_id(report)
    order = topological_order(graph)
    category = {layer.id: _category(results.get(layer.id)) for layer in order}
    kept = [layer for layer in order if layer.type != "Const" or category[layer.id] not in ("not-judged", "passed")]
    consts = len(order) - len(kept)
    kept_ids = {layer.id for layer in kept}
    preds = _predecessors(graph, kept_ids)
    group_of, nodes = _collapse(kept, preds, category, results)
    edges = sorted({(group_of[p], group_of[c]) for c, ps in preds.items() for p in ps if group_of[p] != group_of[c]})
    notes = [f"{consts} Const layer{'s' if consts != 1 else ''} not drawn"] if consts else []
    collapsed = sum(len(n.layers) for n in nodes if len(n.layers) > 1)
    if collapsed:
        notes.append(f"{collapsed} passed layers drawn as {sum(len(n.layers) > 1 for n in nodes)} runs")
    if len(nodes) > cap:
        nodes, edges, note = _window(nodes, edges, cap)
        notes.append(note)
    return View(nodes, edges, notes)


def topological_order(graph: Graph) -> list[Layer]:
    """The layers in an order where each follows its inputs, the file's order among equals.
    A layer on a cycle (a malformed graph) comes last rather than being lost."""
    indegree = {layer.id: 0 for layer in graph.layers}
    successors: dict[int, list[int]] = {layer.id: [] for layer in graph.layers}
    for edge in graph.edges:
        if edge.from_layer in indegree and edge.to_layer in indegree:
            indegree[edge.to_layer] += 1
            successors[edge.from_layer].append(edge.to_layer)
    by_id = {layer.id: layer for layer in graph.layers}
    ready = [layer.id for layer in graph.layers if indegree[layer.id] == 0]
    order: list[int] = []
    while ready:
        current = ready.pop(0)
        order.append(current)
        for nxt in successors[current]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    placed = set(order)
    return [by_id[i] for i in order] + [layer for layer in graph.layers if layer.id not in placed]


def _results_by_id(report: Report) -> dict[int, LayerResult]:
    """Each layer's most severe record (a stateful model's records repeat a layer per step)."""
    out: dict[int, LayerResult] = {}
    for record in [*report.records, *([report.bisect] if report.bisect is not None else [])]:
        held = out.get(record.id)
        if held is None or _SEVERITY[_category(record)] > _SEVERITY[_category(held)]:
            out[record.id] = record
    return out


def _category(record: LayerResult | None) -> str:
    return "not-judged" if record is None else _CATEGORY.get(record.status, "not-judged")


def _predecessors(graph: Graph, kept: set[int]) -> dict[int, list[int]]:
    preds: dict[int, list[int]] = {i: [] for i in kept}
    for edge in graph.edges:
        if edge.from_layer in kept and edge.to_layer in kept and edge.from_layer not in preds[edge.to_layer]:
            preds[edge.to_layer].append(edge.from_layer)
    return preds


def _collapse(kept: list[Layer], preds: dict[int, list[int]], category: dict[int, str],
              results: dict[int, LayerResult]) -> tuple[dict[int, int], list[Node]]:
    """Runs of passed layers, each the only input of the next and read by it alone, as one node."""
    readers: dict[int, int] = {}
    for ps in preds.values():
        for p in ps:
            readers[p] = readers.get(p, 0) + 1
    group_of: dict[int, int] = {}
    nodes: list[Node] = []
    for layer in kept:
        ps = preds[layer.id]
        joins = (category[layer.id] == "passed" and len(ps) == 1 and category[ps[0]] == "passed"
                 and readers.get(ps[0]) == 1)
        if joins:
            group_of[layer.id] = group_of[ps[0]]
            nodes[group_of[layer.id]].layers.append(layer.id)
        else:
            group_of[layer.id] = len(nodes)
            nodes.append(Node(layer.name, _type_version(layer), category[layer.id], [layer.id]))
    by_id = {layer.id: layer for layer in kept}
    for node in nodes:
        if len(node.layers) > 1:
            node.title, node.op = f"{len(node.layers)} passed layers", f"{by_id[node.layers[0]].name} \u2026"
            node.detail = _run_detail(node, by_id)
        else:
            node.detail = _detail(by_id[node.layers[0]], results.get(node.layers[0]))
    return group_of, nodes


def _detail(layer: Layer, record: LayerResult | None) -> dict:
    verdict = "not judged" if record is None else VERDICT.get(record.status, record.status)
    tensors = [] if record is None else [
        [t.key, "ok" if t.diff.passed else "FAIL", _number(t.diff.max_abs), _number(t.diff.max_ulps, 0)]
        for t in record.tensors]
    return {"name": layer.name, "op": _type_version(layer), "id": layer.id, "verdict": verdict,
            "reason": (record.reason or "") if record is not None else "", "tensors": tensors}


def _run_detail(node: Node, by_id: dict[int, Layer]) -> dict:
    names = [by_id[i].name for i in node.layers]
    return {"name": node.title, "op": f"{names[0]} \u2026 {names[-1]}", "id": "", "verdict": "ok",
            "reason": "layers one after another, each within tolerance", "tensors": [], "layers": names}


def _number(value: float | None, digits: int = 3) -> str:
    if value is None:
        return ""
    return f"{value:.0f}" if digits == 0 and value == value and abs(value) != float("inf") else f"{value:.{digits}g}"


def _window(nodes: list[Node], edges: list[tuple[int, int]], cap: int) -> tuple[list[Node], list[tuple[int, int]], str]:
    """`cap` nodes in topological order, starting a little before the first divergence (or the
    first layer that did not pass, when none diverged)."""
    first = next((i for i, n in enumerate(nodes) if n.category in ("failed", "crashed")), None)
    if first is None:
        first = next((i for i, n in enumerate(nodes) if n.category not in ("passed", "not-judged")), 0)
    start = max(0, min(first - cap // 5, len(nodes) - cap))
    shown = range(start, start + cap)
    kept = [(a - start, b - start) for a, b in edges if a in shown and b in shown]
    note = (f"only nodes {start + 1} to {start + cap} of {len(nodes)} are drawn, in topological order, "
            "from a little before the first divergence; the table below has every layer")
    return nodes[start:start + cap], kept, note


# --- the layout computed here ---------------------------------------------------------------------

NODE_WIDTH, NODE_HEIGHT, GAP_X, GAP_Y, MARGIN = 190, 38, 24, 34, 12


def layered_layout(count: int, edges: Iterable[tuple[int, int]]) -> list[tuple[float, float]]:
    """The top-left corner of each node: rank by longest path from a source (every edge points
    down), and within a rank, nodes ordered by the mean place of their inputs, so that a branch
    stays under what feeds it. Node indices are in topological order."""
    preds: list[list[int]] = [[] for _ in range(count)]
    for a, b in edges:
        preds[b].append(a)
    rank = [0] * count
    for node in range(count):
        rank[node] = 1 + max((rank[p] for p in preds[node]), default=-1)
    ranks: list[list[int]] = [[] for _ in range(max(rank, default=-1) + 1)]
    slot = [0.0] * count
    for node in range(count):
        ranks[rank[node]].append(node)
    for members in ranks:
        members.sort(key=lambda n: (sum(slot[p] for p in preds[n]) / len(preds[n]) if preds[n] else 0.0, n))
        for place, node in enumerate(members):
            slot[node] = place - (len(members) - 1) / 2  # centred, so a lone node sits under its inputs
    widest = max((len(m) for m in ranks), default=1)
    centre = MARGIN + (widest - 1) / 2 * (NODE_WIDTH + GAP_X)
    return [(centre + slot[n] * (NODE_WIDTH + GAP_X), MARGIN + rank[n] * (NODE_HEIGHT + GAP_Y)) for n in range(count)]


def _svg(view: View) -> str:
    at = layered_layout(len(view.nodes), view.edges)
    width = max((x for x, _ in at), default=0) + NODE_WIDTH + MARGIN + _BULGE_MAX
    height = max((y for _, y in at), default=0) + NODE_HEIGHT + MARGIN
    paths = [_edge_path(at[a], at[b]) for a, b in view.edges]
    boxes = [_svg_node(i, node, x, y) for i, (node, (x, y)) in enumerate(zip(view.nodes, at))]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img">'
            '<defs><marker id="graph-arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" '
            'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#888"/></marker></defs>'
            f'<g class="edges" fill="none" stroke="#999" stroke-width="1.1" marker-end="url(#graph-arrow)">'
            f'{"".join(paths)}</g>{"".join(boxes)}</svg>')


_BULGE_MAX = 90  # how far right an edge that skips ranks may swing


def _edge_path(source: tuple[float, float], target: tuple[float, float]) -> str:
    """An edge from the bottom of one box to the top of the next rank's; one that skips ranks
    swings out to the right, between the boxes' sides, instead of running through the boxes
    in between (a residual connection then shows as an arc beside the chain)."""
    (xa, ya), (xb, yb) = source, target
    span = round((yb - ya) / (NODE_HEIGHT + GAP_Y))
    if span > 1:
        x1, y1, x2, y2 = xa + NODE_WIDTH, ya + NODE_HEIGHT / 2, xb + NODE_WIDTH, yb + NODE_HEIGHT / 2
        bulge = min(_BULGE_MAX, 20 + 8 * span)
        return (f'<path d="M{x1:.0f},{y1:.0f} C{x1 + bulge:.0f},{y1:.0f} {x2 + bulge:.0f},{y2:.0f} '
                f'{x2 + 3:.0f},{y2:.0f}"/>')
    x1, y1, x2, y2 = xa + NODE_WIDTH / 2, ya + NODE_HEIGHT, xb + NODE_WIDTH / 2, yb
    bend = GAP_Y / 2 + 4
    return f'<path d="M{x1:.0f},{y1:.0f} C{x1:.0f},{y1 + bend:.0f} {x2:.0f},{y2 - bend:.0f} {x2:.0f},{y2 - 3:.0f}"/>'


def _svg_node(index: int, node: Node, x: float, y: float) -> str:
    fill, border = _STYLE_OF[node.category]
    dashed = ' stroke-dasharray="4 3"' if node.category in ("skipped", "not-judged") else ""
    return (f'<g class="node {node.category}" id="node-{index}"><title>{_e(tooltip(node))}</title>'
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{NODE_WIDTH}" height="{NODE_HEIGHT}" rx="5" fill="{fill}" '
            f'stroke="{border}"{dashed}/>'
            f'<text x="{x + NODE_WIDTH / 2:.0f}" y="{y + 15:.0f}" class="name">{_e(_cut(node.title))}</text>'
            f'<text x="{x + NODE_WIDTH / 2:.0f}" y="{y + 30:.0f}" class="op">{_e(_cut(node.op))}</text></g>')


def _cut(text: str) -> str:
    return text if len(text) <= _NAME_CHARS else text[: _NAME_CHARS - 1] + "\u2026"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def tooltip(node: Node) -> str:
    d = node.detail
    lines = [f"{d['name']} ({d['op']})", f"verdict: {d['verdict']}"] + ([d["reason"]] if d["reason"] else [])
    lines += [f"{key}: {verdict}, max abs {abs_}, ulps {ulps}" for key, verdict, abs_, ulps in d["tensors"]]
    return "\n".join(lines)


# --- Graphviz, when it is installed ---------------------------------------------------------------


def dot_program() -> str | None:
    return shutil.which("dot")


def dot_text(view: View) -> str:
    """The view in Graphviz's language: ids and tooltips the page's script and reader use."""
    lines = ["digraph model {", '  rankdir=TB; nodesep=0.25; ranksep=0.35; bgcolor="transparent";',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, width=2.4, height=0.5];',
             '  edge [color="#999999", arrowsize=0.6];']
    for i, node in enumerate(view.nodes):
        fill, border = _STYLE_OF[node.category]
        style = "rounded,filled,dashed" if node.category in ("skipped", "not-judged") else "rounded,filled"
        label = f"{_dot(_cut(node.title))}\\n{_dot(_cut(node.op))}"
        lines.append(f'  n{i} [id="node-{i}", class="{node.category}", label="{label}", fillcolor="{fill}", '
                     f'color="{border}", style="{style}", tooltip="{_dot(tooltip(node))}"];')
    lines += [f"  n{a} -> n{b};" for a, b in view.edges]
    return "\n".join(lines + ["}", ""])


def _dot(text: str) -> str:
    """A DOT string's content: its quotes and backslashes escaped, its line breaks as \\n."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def graphviz_svg(view: View) -> str | None:
    """The view laid out by `dot`, or None when it is missing, fails or takes too long."""
    program = dot_program()
    if program is None:
        return None
    try:
        done = subprocess.run([program, "-Tsvg"], input=dot_text(view), capture_output=True, text=True,
                              timeout=_DOT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    start = done.stdout.find("<svg")
    if done.returncode != 0 or start < 0:
        return None
    return done.stdout[start:]  # the XML declaration, doctype and comments do not belong inside HTML


# --- the page's section ---------------------------------------------------------------------------


def section(report: Report, graph: Graph) -> str:
    """The graph's part of the page: heading, legend, drawing, detail panel and its data."""
    view = build_view(graph, report)
    if not view.nodes:
        return ""
    svg = graphviz_svg(view)
    engine = "Laid out by Graphviz (dot)."
    if svg is None:
        svg = _svg(view)
        engine = "Laid out by irscatter's layered layout (with Graphviz's dot on the PATH, dot lays it out)."
    legend = "".join(f'<span class="key {name}" style="background:{fill};border-color:{border}">{_e(text)}</span>'
                     for name, fill, border, text in CATEGORIES)
    notes = " ".join(f"{note[0].upper()}{note[1:]}." for note in view.notes)
    # the data sits in a script element: "<", ">" and "&" escaped so that no name can end it
    data = json.dumps([n.detail for n in view.nodes]).replace("<", "\\u003c").replace(">", "\\u003e")
    data = data.replace("&", "\\u0026")
    return (f'<h2>The graph, by verdict</h2>\n<p class="legend">{legend}</p>\n'
            f'<div class="graph-area"><div class="graph-scroll">{svg}</div>'
            '<aside id="graph-detail"><p class="hint">Hover over a node for its verdict; click it for its '
            'tensors.</p></aside></div>\n'
            f'<p class="graph-caption">{_e(engine)} {_e(notes)}</p>\n'
            f'<script type="application/json" id="graph-data">{data}</script>')


GRAPH_STYLE = """
.legend .key { display: inline-block; font-size: 12px; padding: 1px 8px; margin: 0 6px 4px 0;
     border: 1px solid; border-radius: 4px; }
.graph-area { display: flex; gap: 16px; align-items: flex-start; }
.graph-scroll { overflow: auto; max-height: 80vh; flex: 1 1 auto; border: 1px solid #e3e3e3; border-radius: 6px; }
.graph-scroll svg { display: block; }
svg.graph text { font: 11px system-ui, sans-serif; text-anchor: middle; fill: #1d1d1f; }
svg.graph text.op { fill: #555; font-size: 10px; }
svg .node { cursor: pointer; }
svg .node.chosen rect, svg .node.chosen path, svg .node.chosen polygon { stroke-width: 3; }
#graph-detail { flex: 0 0 22em; font-size: 13px; position: sticky; top: 8px; word-break: break-word; }
#graph-detail table { font-size: 12px; }
.graph-caption { color: #555; font-size: 13px; }
"""

# A click on a node shows its record in the panel, built with textContent: names stay text.
GRAPH_SCRIPT = """
(function () {
  var source = document.getElementById("graph-data");
  if (!source) return;
  var nodes = JSON.parse(source.textContent);
  var panel = document.getElementById("graph-detail");
  var chosen = null;
  function add(parent, tag, text) {
    var element = document.createElement(tag);
    if (text !== undefined) element.textContent = text;
    parent.appendChild(element);
    return element;
  }
  function show(detail) {
    panel.textContent = "";
    add(panel, "h3", detail.name);
    add(panel, "p", detail.op + (detail.id !== "" ? " (layer " + detail.id + ")" : ""));
    add(panel, "p", "verdict: " + detail.verdict);
    if (detail.reason) add(panel, "p", detail.reason);
    if (detail.tensors.length) {
      var table = add(panel, "table");
      var head = add(table, "tr");
      ["tensor", "verdict", "max abs", "ulps"].forEach(function (h) { add(head, "th", h); });
      detail.tensors.forEach(function (t) {
        var row = add(table, "tr");
        t.forEach(function (cell) { add(row, "td", cell); });
      });
    }
    if (detail.layers) {
      var list = add(panel, "ol");
      detail.layers.forEach(function (name) { add(list, "li", name); });
    }
  }
  document.querySelectorAll(".graph-scroll g.node").forEach(function (g) {
    g.addEventListener("click", function () {
      var index = Number(g.id.slice("node-".length));
      if (chosen) chosen.classList.remove("chosen");
      chosen = g;
      g.classList.add("chosen");
      show(nodes[index]);
    });
  });
  panel.setAttribute("data-ready", "ready");
})();
"""


def _type_version(layer: Layer) -> str:
    """"Divide-1", as the report's table names an op, rather than the opset the file tags it with."""
    return f"{layer.type}-{version_text(layer.type, layer.version)}"
