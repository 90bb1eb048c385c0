"""`compare A.xml B.xml`: two IRs of one model, both run by irscatter, B judged against A tensor
by tensor. The second IRs are the model saved again by OpenVINO (as it is, and with f16
weights; in a subprocess, tests/data/resave_openvino.py), a copy with one weight changed, and
hand-written pairs for matching by tensor name, element types and shapes that differ."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import layer, net, param, port, result, write

import irscatter
from irscatter.cli import main
from irscatter.debug.two_models import compare_files, match_tensors, unmatched
from irscatter.debug.verdicts import summary_line, table

MODELS = Path(__file__).resolve().parent.parent / "models"
BLOCK = MODELS / "transformer_block" / "model.xml"
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def feeds():
    return dict(np.load(BLOCK.parent / "inputs.npz"))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The transformer block saved again by OpenVINO: as read, and with f16 weights."""
    folder = tmp_path_factory.mktemp("saved")
    done = subprocess.run([sys.executable, str(DATA / "resave_openvino.py"), str(BLOCK), str(folder)],
                          capture_output=True, text=True, timeout=120, check=False)
    if "No module named 'openvino'" in done.stderr:
        pytest.skip("openvino is not installed, so the differential tests against it did not run")
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A copy of the transformer block with one weight of MatMul_25 (its second input) changed."""
    folder = tmp_path_factory.mktemp("planted")
    xml = shutil.copy(BLOCK, folder / "model.xml")
    model = irscatter.read_model(BLOCK)
    target = next(lay for lay in model.layers if lay.name == "MatMul_25")
    edge = next(e for e in model.edges if e.to_layer == target.id and e.to_port == target.inputs[1].id)
    offset = int(model.layer(edge.from_layer).attrs["offset"])
    weights = bytearray(BLOCK.with_suffix(".bin").read_bytes())
    value = np.frombuffer(weights, np.float32, 1, offset + 4 * 5)[0]
    weights[offset + 4 * 5: offset + 4 * 6] = np.float32(value + 0.25).tobytes()
    (folder / "model.bin").write_bytes(weights)
    return Path(xml)


def test_a_model_against_itself_saved_again_passes_every_tensor(saved, feeds):
    report = compare_files(BLOCK, saved / "resaved.xml", feeds)
    assert report.passed and report.mode == "models"
    assert all(r.status == "passed" for r in report.records)  # every layer matched and equal
    assert unmatched(report) == {"A": [], "B": []}
    assert all(t.diff.max_abs == 0 for r in report.records for t in r.tensors)
    assert report.notes[0] == "tolerance presets of f32 (rtol 0.0001, atol 1e-05): no compressed weights"


def test_f16_weights_pass_at_f16_presets_and_the_converts_they_add_are_listed(saved, feeds):
    report = compare_files(BLOCK, saved / "f16.xml", feeds)
    assert report.passed, table(report)
    assert "f16 (rtol 0.01, atol 0.002): B has compressed weights (13 f16)" in report.notes[0]
    only = unmatched(report)
    assert only["A"] == [] and len(only["B"]) == 13
    b = irscatter.read_model(saved / "f16.xml")
    assert {lay.type for lay in b.layers if lay.name in only["B"]} == {"Convert"}
    text = table(report)
    assert "only in B (13): Constant_3, Constant_5" in text and "B: " in text.splitlines()[-1]
    # f32's presets see the rounding of the weights from the first layer that reads one
    strict = compare_files(BLOCK, saved / "f16.xml", feeds, precision="f32")
    assert strict.first_divergence.name == "Multiply_9"


def test_a_planted_weight_is_found_at_the_layer_that_reads_it(planted, feeds):
    report = compare_files(BLOCK, planted, feeds)
    first = report.first_divergence
    assert not report.passed and first.name == "MatMul_25"
    assert [t.key for t in first.tensors if not t.diff.passed] == ["MatMul_25:2"]
    assert first.tensors[0].diff.mismatches == 16  # one weight: one column of each of 16 rows
    earlier = [r for r in report.records if 0 <= r.position < first.position]
    assert earlier and all(r.status == "passed" for r in earlier)
    assert f'first divergence: tensor "MatMul_25:2" of B\'s layer {first.id} "MatMul_25"' in summary_line(report)


def _pair(folder: Path) -> tuple[Path, Path]:
    """A: x -> ReLU "relu" (tensor "act") -> Negative -> Negative (tensor "out"); Concat(x)
    (tensor "cat"); ShapeOf i64 (tensor "shape"). B, renamed and retyped: x -> Convert f16 ->
    ReLU "relu16" in f16 ("act") -> Convert f32 "back" ("out"); Concat(x, x) ("cat", twice
    as long); ShapeOf i32 ("shape")."""
    f32, f16 = "FP32", "FP16"
    a = net([param(0, "x", [2, 3]),
             layer(1, "relu", "ReLU", inputs=[port(0, f32, [2, 3])], outputs=[port(1, f32, [2, 3], "act")]),
             layer(2, "neg", "Negative", inputs=[port(0, f32, [2, 3])], outputs=[port(1, f32, [2, 3])]),
             layer(3, "neg2", "Negative", inputs=[port(0, f32, [2, 3])], outputs=[port(1, f32, [2, 3], "out")]),
             result(4, "r0", [2, 3]),
             layer(5, "cat", "Concat", data={"axis": 0}, inputs=[port(0, f32, [2, 3])],
                   outputs=[port(1, f32, [2, 3], "cat")]),
             result(6, "r1", [2, 3]),
             layer(7, "shape", "ShapeOf", "opset3", {"output_type": "i64"}, [port(0, f32, [2, 3])],
                   [port(1, "I64", [2], "shape")]),
             result(8, "r2", [2], "I64")],
            [(0, 0, 1, 0), (1, 1, 2, 0), (2, 1, 3, 0), (3, 1, 4, 0), (0, 0, 5, 0), (5, 1, 6, 0), (0, 0, 7, 0),
             (7, 1, 8, 0)])
    b = net([param(0, "x", [2, 3]),
             layer(1, "to16", "Convert", data={"destination_type": "f16"}, inputs=[port(0, f32, [2, 3])],
                   outputs=[port(1, f16, [2, 3])]),
             layer(2, "relu16", "ReLU", inputs=[port(0, f16, [2, 3])], outputs=[port(1, f16, [2, 3], "act")]),
             layer(3, "back", "Convert", data={"destination_type": "f32"}, inputs=[port(0, f16, [2, 3])],
                   outputs=[port(1, f32, [2, 3], "out")]),
             result(4, "r0", [2, 3]),
             layer(5, "cat", "Concat", data={"axis": 0}, inputs=[port(0, f32, [2, 3]), port(1, f32, [2, 3])],
                   outputs=[port(2, f32, [4, 3], "cat")]),
             result(6, "r1", [4, 3]),
             layer(7, "shape", "ShapeOf", "opset3", {"output_type": "i32"}, [port(0, f32, [2, 3])],
                   [port(1, "I32", [2], "shape")]),
             result(8, "r2", [2], "I32")],
            [(0, 0, 1, 0), (1, 1, 2, 0), (2, 1, 3, 0), (3, 1, 4, 0), (0, 0, 5, 0), (0, 0, 5, 1), (5, 2, 6, 0),
             (0, 0, 7, 0), (7, 1, 8, 0)])
    return write(folder, a, name="a"), write(folder, b, name="b")


X = np.array([[-1.5, 0.25, 2.0], [3.0, -4.0, 0.5]], np.float32)  # exact in f16


def test_tensor_names_match_across_layer_names_types_are_converted_and_shapes_are_findings(tmp_path):
    a_xml, b_xml = _pair(tmp_path)
    a, b = irscatter.read_model(a_xml).compile(), irscatter.read_model(b_xml).compile()
    pairs = {b.graph.layers[m.b[0]].name: (a.graph.layers[m.a[0]].name, m.by) for m in match_tensors(a, b)}
    assert pairs == {"relu16": ("relu", 'tensor name "act"'), "back": ("neg2", 'tensor name "out"'),
                     "cat": ("cat", 'tensor name "cat"'), "shape": ("shape", 'tensor name "shape"')}
    report = compare_files(a_xml, b_xml, {"x": X})
    by_name = {r.name: r for r in report.records}
    assert sorted(r.name for r in report.records[:-1]) == ["back", "cat", "relu16", "shape", "to16"]  # B's
    assert report.records[-1].name == "neg" and report.records[-1].position == -1  # then A's own
    assert by_name["relu16"].status == "passed" and by_name["relu16"].reason == 'as A\'s "relu:1" (tensor name "act")'
    assert by_name["shape"].status == "passed"  # i32 against i64, exactly
    assert by_name["cat"].tensors[0].diff.problem == "shape [2, 3] in a.xml, [4, 3] in b.xml"  # each file named
    assert report.first_divergence is by_name["cat"]
    assert unmatched(report) == {"A": ["neg"], "B": ["to16"]}
    assert "compared in A's element type: 1 tensor f16 in B, f32 in A (relu16:1)" in report.notes
    assert "compared in A's element type: 1 tensor i32 in B, i64 in A (shape:1)" in report.notes


def test_cli_exit_status_json_and_usage_errors(tmp_path, planted, capsys):
    inputs = ["--inputs", str(BLOCK.parent / "inputs.npz")]
    assert main(["compare", str(BLOCK), str(BLOCK), *inputs]) == 0
    assert "no divergence" in capsys.readouterr().out
    assert main(["compare", str(BLOCK), str(planted), *inputs, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "models" and report["first_divergence"]["name"] == "MatMul_25"
    assert report["model"] == f"A: {BLOCK}" and report["target"] == f"B: {planted}"
    assert main(["compare", str(BLOCK), str(planted), *inputs, "--tol", "MatMul_25|Add_28=1"]) == 1  # still: later layers
    capsys.readouterr()
    np.savez(tmp_path / "d.npz", x=X)
    for extra, message in [(["--target", "openvino"], "--target does not apply"),
                           (["--whole"], "--whole does not apply"),
                           (["--tol", "nothing_here=1"], "matches no tensor")]:
        assert main(["compare", str(BLOCK), str(planted), *inputs, *extra]) == 2
        assert message in capsys.readouterr().err
    assert main(["compare", str(BLOCK), str(tmp_path / "d.npz")]) == 2
    assert "not one of each" in capsys.readouterr().err
