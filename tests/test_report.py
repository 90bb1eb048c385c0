"""`irscatter compare --report`: the self-contained HTML page (chart, graph by verdict, sortable
table, summary, command), checked as parsed HTML, through the command line, and in a headless
browser."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from chains import chain
from helpers import cli
from lxml import html as lxml_html

from irscatter import cli as irscatter_cli
from irscatter.debug import graph_drawing
from irscatter.debug import html as report_html
from irscatter.debug.verdicts import LayerResult, Report, TensorResult
from irscatter.ir.graph import Edge, Graph, Layer
from irscatter.metrics import PRESETS, diff

needs_openvino = pytest.mark.skipif(importlib.util.find_spec("openvino") is None,
                                    reason="openvino is not installed, so compare --report did not run against it")
needs_matplotlib = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                      reason="matplotlib is not installed (pip install irscatter[report])")
needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None,
                                    reason="chromium is not installed, so the report was not opened in a browser")
HOSTILE_NAME = '<b>&"x'
COMMAND = "irscatter compare model.xml --inputs in.npz --report out.html"


def _float_tensor(key: str, error: float = 0.0) -> TensorResult:
    want = np.linspace(-1, 1, 16, dtype=np.float32)
    got = want + np.float32(error)
    return TensorResult(key, diff(got, want, PRESETS["f32"]))


def _int_tensor(key: str, differ: bool) -> TensorResult:
    want = np.arange(-8, 8, dtype=np.int32)
    got = want // 3 + (want % 3 != 0) * differ  # truncating instead of flooring, when asked to differ
    return TensorResult(key, diff(got, want // 3, None))


def sample_report(layers: int = 40) -> Report:
    """A layer-by-layer report with every kind of verdict: errors growing slowly, an integer
    layer that differs (the first divergence), a layer named with HTML's special characters, a
    crash, a hang, one not compared, and a NaN on one side."""
    report = Report("/models/sample/model.xml", "OpenVINO 2026.4.1 CPU at f32", "layers", seconds=1.25)
    for position in range(layers):
        name, op = f"layer_{position}", "Add-1"
        record = LayerResult(position, position + 10, name, op, 20 + position, "passed")
        if position == 7:
            record.name, record.op = HOSTILE_NAME, "Divide-1"
            record.tensors.append(_int_tensor(f"{HOSTILE_NAME}:2", differ=True))
        elif position == 12:
            record.status, record.reason = "crashed", "the worker died (signal 11)"
        elif position == 13:
            record.status, record.reason = "hung", "no answer in 120 s"
        elif position == 14:
            record.status, record.reason = "not compared", "it draws from the target's own random generator"
        elif position == 20:
            nan = _float_tensor(f"{name}:2")
            broken = np.linspace(-1, 1, 16, dtype=np.float32)
            broken[3] = np.nan
            record.tensors.append(TensorResult(nan.key, diff(broken, np.linspace(-1, 1, 16, dtype=np.float32),
                                                             PRESETS["f32"])))
        else:
            record.tensors.append(_float_tensor(f"{name}:2", error=1e-7 * 1.3 ** (position % 50)))
        if record.status == "passed" and record.tensors:
            record.status = "passed" if all(t.diff.passed for t in record.tensors) else "failed"
        report.layers.append(record)
    return report


def _page(text: str):
    return lxml_html.document_fromstring(text)


def _body_rows(page) -> list:
    return page.xpath('//table[@id="layers"]/tbody/tr')


# --- the metric the chart draws ------------------------------------------------------------------


def test_worst_ratio_is_the_largest_error_over_its_allowance():
    want = np.array([1.0, 2.0, 0.0], np.float32)
    tolerance = PRESETS["f32"]
    assert diff(want.copy(), want, tolerance).worst_ratio == 0.0
    # at the element 2.0 the allowance is atol * 2 (the scale) + rtol * 2
    got = want + np.array([0, 2e-4, 0], np.float32)
    allowed = tolerance.atol * 2 + tolerance.rtol * 2
    assert diff(got, want, tolerance).worst_ratio == pytest.approx(float(got[1] - want[1]) / allowed)
    one_sided = np.array([1.0, np.nan, 0.0], np.float32)
    assert diff(one_sided, want, tolerance).worst_ratio == np.inf
    assert diff(want[:0], want[:0], tolerance).worst_ratio == 0.0
    assert diff(np.array([1, 2]), np.array([1, 3]), None).worst_ratio is None  # exact types have no ratio


# --- the page, rendered by hand ------------------------------------------------------------------


@needs_matplotlib
def test_the_page_holds_the_chart_every_row_and_the_summary():
    report = sample_report()
    text = report_html.render(report, command=COMMAND)
    page = _page(text)
    assert len(page.xpath("//figure//svg")) == 1
    rows = _body_rows(page)
    # one row per tensor, and one for each layer without tensors (crashed, hung, not compared)
    assert len(rows) == sum(max(1, len(r.tensors)) for r in report.layers) == 40
    assert [r.xpath("string(td[2])") for r in rows] == [r.name for r in report.layers]
    first = page.xpath('//tr[@id="first-divergence"]')
    assert len(first) == 1 and first[0].xpath("string(td[2])") == HOSTILE_NAME and "first" in first[0].get("class")
    assert {"failed", "crashed", "hung", "not-compared"} <= {c for r in rows for c in r.get("class").split()}
    summary = page.xpath("string(//dl[@class='summary'])")
    assert "OpenVINO 2026.4.1 CPU" in summary and "1.25" in summary and HOSTILE_NAME in summary
    assert page.xpath("string(//pre)") == COMMAND
    assert "first divergence: " + HOSTILE_NAME in "".join(page.xpath("//svg//text()"))


@needs_matplotlib
def test_names_from_the_model_are_escaped():
    text = report_html.render(sample_report(), command=f"irscatter compare '{HOSTILE_NAME}.xml'")
    assert HOSTILE_NAME not in text  # nowhere raw: not in the table, the summary, the chart or the command
    assert "&lt;b&gt;&amp;&quot;x" in text
    page = _page(text)
    assert not page.xpath("//td//b | //dd//b | //pre//b")  # the name made no element of its own


@needs_matplotlib
def test_the_page_names_both_sides_each_tensor_and_why_a_layer_was_skipped():
    report = sample_report()
    report.target_name = "openvino:CPU"
    want = np.linspace(-1, 1, 16, dtype=np.float32)
    got = want.copy()
    got[5] += 1
    report.layers[3].tensors = [TensorResult("layer_3:2", diff(got, want, PRESETS["f32"], report.sides), ("logits",))]
    report.layers[3].status = "failed"
    report.layers[15].status, report.layers[15].tensors = "refused", []
    page = _page(report_html.render(report, command=COMMAND))
    headings = page.xpath('//table[@id="layers"]/thead//th/text()')
    assert headings[3:5] == ["tensor", "shape"] and headings[13:15] == ["irscatter", "openvino:CPU"]
    row = _body_rows(page)[3]
    cells = [row.xpath(f"string(td[{i}])") for i in range(1, 17)]
    assert cells[3] == "layer_3:2 (logits)" and cells[4] == "[16] f32" and cells[12] == "[5]"
    assert (float(cells[13]), float(cells[14])) == (want[5], got[5])
    assert f"irscatter {str(want[5])}, openvino:CPU {str(got[5])}" in cells[15]
    reasons = {r.xpath("string(td[2])"): r.xpath("string(td[16])") for r in _body_rows(page)}
    assert reasons["layer_14"] == "it draws from the target's own random generator"
    assert reasons["layer_15"] == "the target refused it"  # a reason even where the comparison gave none
    summary = page.xpath("string(//dl[@class='summary'])")
    assert "referenceirscatter" in summary and "judgedopenvino:CPU (OpenVINO 2026.4.1 CPU at f32)" in summary


@needs_matplotlib
def test_the_page_refers_to_nothing_outside_itself():
    page = _page(report_html.render(sample_report(), command=COMMAND))
    for element in page.iter():
        if not isinstance(element.tag, str):
            continue  # comments
        for attribute in ("src", "href", "xlink:href", "{http://www.w3.org/1999/xlink}href", "data"):
            value = element.get(attribute)
            assert value is None or value.startswith("#"), (element.tag, attribute, value)
    assert not page.xpath("//link | //iframe | //img | //object | //script[@src]")
    assert "@import" not in page.xpath("string(//style)") and "url(" not in page.xpath("string(//style)")


@needs_matplotlib
def test_a_report_with_nothing_compared_and_a_whole_model_report_render():
    empty = _page(report_html.render(Report("m.xml", "t", "layers"), command="c"))
    assert empty.xpath("//svg") and _body_rows(empty) == []
    whole = Report("m.xml", "t", "whole", bisect_note="3 prefixes run; the prefix ending at position 7 is the first")
    whole.outputs.append(LayerResult(9, 30, "softmax", "Softmax-8", 40, "failed",
                                     tensors=[_float_tensor("probs", error=0.2)]))
    whole.bisect = LayerResult(7, 28, "divide", "Divide-1", 30, "failed", tensors=[_int_tensor("divide:2", True)])
    page = _page(report_html.render(whole, command="c"))
    rows = _body_rows(page)
    assert [r.xpath("string(td[2])") for r in rows] == ["softmax", "divide bisect"]
    assert rows[1].get("id") == "first-divergence" and "3 prefixes run" in page.xpath("string(//dl)")


@needs_matplotlib
def test_a_long_model_keeps_the_chart_small(tmp_path):
    svg = _page(report_html.render(sample_report(2000), command=COMMAND)).xpath("//svg")[0]
    assert len(svg.xpath(".//text")) < 60  # axis ticks and a few labels, never one per layer
    assert len(lxml_html.tostring(svg)) < 600_000


# --- the graph, coloured by verdict ----------------------------------------------------------------

# (id, name, type, inputs): a run of passed layers, the planted layer, and two branches after it
_GRAPH = [(1, "x", "Parameter", []), (2, "weights", "Const", []), (3, "add_a", "Add", [1, 2]),
          (4, "relu_a", "Relu", [3]), (5, "relu_b", "Relu", [4]), (6, HOSTILE_NAME, "Divide", [5, 2]),
          (7, "after_left", "Relu", [6]), (8, "after_right", "Sigmoid", [6]), (9, "joined", "Add", [7, 8]),
          (10, "refused_one", "Erf", [9]), (11, "y", "Result", [10])]
_STATUS = {6: "failed", 7: "failed", 8: "failed", 9: "crashed", 10: "refused", 11: "not compared"}


def _planted_graph() -> tuple[Graph, Report]:
    layers = [Layer(id=i, name=name, type=kind, version="opset1") for i, name, kind, _ in _GRAPH]
    edges = [Edge(src, 0, i, port) for i, _, _, sources in _GRAPH for port, src in enumerate(sources)]
    report = Report("/models/planted.xml", "OpenVINO 2026.4.1 CPU at f32", "layers")
    for position, (i, name, kind, _) in enumerate(_GRAPH[2:]):
        status = _STATUS.get(i, "passed")
        error = 0.5 if status == "failed" else 0.0
        tensors = [_float_tensor(f"{name}:1", error)] if status in ("passed", "failed") else []
        report.layers.append(LayerResult(position, i, name, f"{kind}-1", None, status, tensors=tensors))
    return Graph(layers=list(reversed(layers)), edges=edges), report  # the file's order need not be topological


def _graph_nodes(page) -> dict[str, list[str]]:
    """Each drawn node's first tooltip line, to its classes."""
    return {n.xpath("string(title)").split("\n")[0]: n.get("class").split()
            for n in page.xpath('//div[@class="graph-scroll"]//g[contains(@class, "node")]')}


@needs_matplotlib
def test_the_graph_colours_each_layer_by_its_verdict_without_graphviz(monkeypatch):
    monkeypatch.setattr(graph_drawing, "dot_program", lambda: None)
    graph, report = _planted_graph()
    text = report_html.render(report, command=COMMAND, graph=graph)
    assert HOSTILE_NAME not in text  # escaped in the drawing, its tooltip and the panel's data
    page = _page(text)
    nodes = _graph_nodes(page)
    assert "failed" in nodes[f"{HOSTILE_NAME} (Divide-1)"]  # where the divergence starts
    assert "failed" in nodes["after_left (Relu-1)"] and "failed" in nodes["after_right (Sigmoid-1)"]
    assert "crashed" in nodes["joined (Add-1)"] and "refused" in nodes["refused_one (Erf-1)"]
    assert "skipped" in nodes["y (Result-1)"] and "not-judged" in nodes["x (Parameter-1)"]
    assert "3 passed layers (add_a \u2026 relu_b)" in nodes  # the passed run before it, drawn as one node
    assert not any(title.startswith("weights") for title in nodes)  # Consts are left out, and said to be
    caption = page.xpath('string(//p[@class="graph-caption"])')
    assert "irscatter's layered layout" in caption and "1 Const layer not drawn" in caption
    details = __import__("json").loads(page.xpath('string(//script[@id="graph-data"])'))
    planted = next(d for d in details if d["name"] == HOSTILE_NAME)
    assert planted["verdict"] == "FAIL" and planted["tensors"][0][:3] == [f"{HOSTILE_NAME}:1", "FAIL", "0.5"]
    # every edge points down: the planted layer is drawn above what reads it
    rows = {t: float(n.xpath("rect/@y")[0]) for n in page.xpath('//svg[@class="graph"]/g[contains(@class, "node")]')
            for t in [n.xpath("string(title)").split(" (")[0]]}
    assert rows[HOSTILE_NAME] < rows["after_left"] == rows["after_right"] < rows["joined"]


def test_graphviz_lays_the_graph_out_when_dot_is_there(tmp_path, monkeypatch):
    dot = tmp_path / "dot"  # a stand-in that keeps what it was given and answers with an SVG
    dot.write_text(f'#!/bin/sh\ncat > {tmp_path}/given.dot\necho \'<?xml version="1.0"?>\'\n'
                   'echo \'<svg><g id="node-0" class="node failed"><title>n0</title></g></svg>\'\n')
    dot.chmod(0o755)
    monkeypatch.setattr(graph_drawing, "dot_program", lambda: str(dot))
    graph, report = _planted_graph()
    view = graph_drawing.build_view(graph, report)
    assert graph_drawing.graphviz_svg(view).startswith("<svg>")
    given = (tmp_path / "given.dot").read_text()
    planted = next(i for i, n in enumerate(view.nodes) if n.title == HOSTILE_NAME)
    failed_fill = dict((name, fill) for name, fill, *_ in graph_drawing.CATEGORIES)["failed"]
    line = next(x for x in given.splitlines() if x.strip().startswith(f"n{planted} ["))
    assert 'class="failed"' in line and failed_fill in line and '<b>&\\"x' in line  # quotes escaped for dot
    assert f"n{planted} -> n{planted + 1};" in given


def test_a_long_model_draws_a_window_around_the_first_divergence():
    count = 3000
    layers = [Layer(id=i, name=f"l{i}", type="Add", version="opset1") for i in range(count)]
    edges = [Edge(i, 0, i + 1, 0) for i in range(count - 1)]
    report = Report("m.xml", "t", "layers")
    for i in range(count):  # every other layer refused: no run of passed layers to collapse
        report.layers.append(LayerResult(i, i, f"l{i}", "Add-1", None, "refused" if i % 2 else "passed"))
    report.layers[2000].status = "failed"
    view = graph_drawing.build_view(Graph(layers=layers, edges=edges), report)
    assert len(view.nodes) == graph_drawing.DRAWN_NODES and "of 3000 are drawn" in view.notes[-1]
    assert "l2000" in [n.title for n in view.nodes]
    assert all(0 <= a < len(view.nodes) and 0 <= b < len(view.nodes) for a, b in view.edges)


def test_without_matplotlib_report_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    np.savez(tmp_path / "a.npz", x=np.zeros(2))
    status = irscatter_cli.main(["compare", str(tmp_path / "a.npz"), str(tmp_path / "a.npz"),
                                 "--report", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert status == 2 and "pip install irscatter[report]" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


# --- the command line ------------------------------------------------------------------------------


@pytest.mark.parametrize("where, message", [(".", "is a directory"), ("missing/r.html", "does not exist")])
def test_cli_refuses_a_report_path_it_cannot_write(tmp_path, where, message):
    np.savez(tmp_path / "a.npz", x=np.zeros(2))
    out = cli("compare", "a.npz", "a.npz", "--report", where, cwd=tmp_path)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


@needs_matplotlib
def test_cli_writes_a_report_of_two_dumps(tmp_path):
    np.savez(tmp_path / "a.npz", **{"x:0": np.arange(4, dtype=np.float32), "n:1": np.array([1, 2])})
    np.savez(tmp_path / "b.npz", **{"x:0": np.arange(4, dtype=np.float32), "n:1": np.array([1, 3])})
    out = cli("compare", "a.npz", "b.npz", "--report", "r.html", cwd=tmp_path)
    assert out.returncode == 1 and "wrote r.html" in out.stderr and "n:1" in out.stdout  # the table still prints
    page = _page((tmp_path / "r.html").read_text())
    assert page.xpath('//tr[@id="first-divergence"]/td[2]/text()') == ["n:1"]
    assert "--report r.html" in page.xpath("string(//pre)")


@needs_openvino
@needs_matplotlib
def test_cli_report_of_a_planted_divergence(tmp_path):
    xml, feeds, planted = chain(tmp_path, 60, 30)
    np.savez(tmp_path / "inputs.npz", **feeds)
    report = tmp_path / "report.html"
    out = cli("compare", str(xml), "--inputs", str(tmp_path / "inputs.npz"), "--json", "--report", str(report))
    assert out.returncode == 1, out.stderr
    assert f"wrote {report}" in out.stderr and '"first_divergence"' in out.stdout
    page = _page(report.read_text())
    rows = _body_rows(page)
    assert len(rows) >= 55 and page.xpath("//figure//svg")
    first = page.xpath('//tr[@id="first-divergence"]')[0]
    assert first.xpath("string(td[2])") == planted and first.xpath("string(td[6])") == "FAIL"
    assert sum("failed" in r.get("class") for r in rows) == 1
    nodes = _graph_nodes(page)
    assert [title for title, classes in nodes.items() if "failed" in classes] == [f"{planted} (Divide-1)"]
    drawn = page.xpath('string(//script[@id="graph-data"])')
    assert drawn.index(planted) < drawn.rindex("convert_") < drawn.index("\"y\"")  # and what follows it


# --- in a browser ----------------------------------------------------------------------------------


def _chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
        capture_output=True, text=True, timeout=90)


# Clicks the "error / allowed" heading twice (descending) and ticks the filter, as a reader would.
_CLICKS = """<script>
var headings = document.querySelectorAll("#layers th");
headings[6].click(); headings[6].click();
document.getElementById("only-diverged").click();
</script></body>"""


@needs_chromium
@needs_matplotlib
def test_a_browser_shows_the_chart_and_the_table_and_runs_the_script(tmp_path):
    report = sample_report()
    page = report_html.write(report, tmp_path / "report.html", command=COMMAND)
    dumped = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _page(dumped.stdout)
    assert dom.xpath("//figure//svg//path")
    assert len(_body_rows(dom)) == 40
    assert dom.xpath('//table[@id="layers"]/@data-sortable') == ["ready"]  # the script ran to its end
    shot = tmp_path / "report.png"
    taken = _chromium(page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,1000")
    assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]


@needs_chromium
@needs_matplotlib
def test_a_click_on_a_heading_sorts_the_rows_in_the_browser(tmp_path):
    clicked = tmp_path / "clicked.html"
    clicked.write_text(report_html.render(sample_report(), command=COMMAND).replace("</body>", _CLICKS))
    dumped = _chromium(clicked, tmp_path / "profile", "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = _page(dumped.stdout)
    rows = _body_rows(dom)
    assert len(rows) == 40 and dom.xpath('//table[@id="layers"]/@class') == ["only-diverged"]
    ratios = [r.xpath("string(td[7])") for r in rows]
    # off-scale values first, then the measured ratios falling, then the layers without one
    assert ratios[:2] == ["differs", "NaN/inf"] and ratios[-3:] == ["", "", ""]
    measured = [float(r) for r in ratios[2:-3]]
    assert measured == sorted(measured, reverse=True)
