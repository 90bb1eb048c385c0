"""`irscatter validate` and `irscatter.validate`: every finding in one pass.

The corpus under tests/corpus/validate holds one clean model and copies of it with one
defect each (tools/make_validate_corpus.py writes them); each names the finding it must
produce. Clean IRs that OpenVINO serialized must give no finding at all."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import kernel_hidden, save_ov

import irscatter
from irscatter.cli import main

CORPUS = Path(__file__).parent / "corpus" / "validate"
BROKEN = sorted(p for p in CORPUS.glob("*.xml") if p.name != "base.xml")
EXPECT = re.compile(r"<!-- expect: (error|warning) (\S+)(?: layer=(\d+))? -->")


def expectation(path: Path) -> tuple[str, str, int | None]:
    m = EXPECT.search(path.read_text())
    assert m, f"{path.name} does not say what it expects"
    return m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None


def test_the_corpus_is_there():
    assert len(BROKEN) >= 30


def test_the_clean_base_has_no_finding():
    report = irscatter.validate(CORPUS / "base.xml")
    assert report.findings == [] and report.ok


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_each_defect_gives_its_finding_first(path):
    severity, code, layer_id = expectation(path)
    with kernel_hidden("Subtract", 1):  # for no_kernel.xml: no other corpus file uses Subtract
        report = irscatter.validate(path)
    first = next(f for f in report.findings if f.severity == severity)
    assert (first.code, first.severity) == (code, severity), [(f.severity, f.code, f.message) for f in report.findings]
    if layer_id is not None:
        assert first.layer is not None and first.layer.id == layer_id
    assert report.ok == (severity == "warning")


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_cli_exit_code_and_line(path, capsys):
    severity, code, _ = expectation(path)
    with kernel_hidden("Subtract", 1):
        status = main(["validate", str(path)])
    out = capsys.readouterr().out
    assert status == (1 if severity == "error" else 0)
    assert f"{severity}: " in out and f"[{code}]" in out
    assert path.name in out.splitlines()[-1]  # the closing count line


def test_json_records(capsys):
    path = CORPUS / "inference_shape_error.xml"
    assert main(["validate", "--json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["errors"] == 1
    (record,) = report["findings"]
    assert record == {"severity": "error", "code": "updates-shape", "message": record["message"],
                      "layer": {"id": 4, "name": "scatter", "type": "ScatterUpdate", "version": 3, "opset": None},
                      "port": "input 2", "line": record["line"], "column": None}
    assert isinstance(record["line"], int)


def test_all_defects_of_one_file_are_reported_together(tmp_path):
    text = (CORPUS / "base.xml").read_text()
    text = text.replace('type="Add" version="opset1"', 'type="Add" version="opset0"')            # unknown opset
    text = text.replace('<data shape="4,2" element_type="f32"/>', '<data shape="4,5" element_type="f32"/>')  # shape
    text = text.replace('<output><port id="0" precision="I64"/></output>',
                        '<output><port id="0" precision="I65"/></output>')                      # port precision
    text = text.replace('<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>',
                        '<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>'
                        '<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>')         # duplicate edge
    (tmp_path / "model.xml").write_text(text)
    (tmp_path / "model.bin").write_bytes((CORPUS / "base.bin").read_bytes())
    codes = {f.code for f in irscatter.validate(tmp_path / "model.xml").errors}
    assert {"unknown-opset", "port-precision", "duplicate-edge", "declared-shape"} <= codes, codes


def test_validate_a_loaded_model():
    model = irscatter.read_model(CORPUS / "declared_shape_wrong.xml")
    report = irscatter.validate(model)
    assert [f.code for f in report.errors] == ["declared-shape"]


def test_missing_file_is_a_usage_error(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope.xml")]) == 2
    assert "not found" in capsys.readouterr().err


# --- clean IRs from OpenVINO ----------------------------------------------------------------------


BUNDLED = sorted((Path(__file__).parent.parent / "models").glob("*/model.xml"))


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.parent.name)
def test_bundled_models_are_clean(path):
    assert irscatter.validate(path).findings == []


def _openvino_models():
    ov = pytest.importorskip("openvino")
    import openvino.opset15 as o

    def scatter_elements():
        d = o.parameter([4, 5], ov.Type.f32, name="d")
        i = o.parameter([2, 5], ov.Type.i64, name="i")
        u = o.parameter([2, 5], ov.Type.f32, name="u")
        return ov.Model([o.result(o.scatter_elements_update(d, i, u, o.constant(np.int64(0)), "mean", False))],
                        [d, i, u])

    def gather_slice():
        d = o.parameter([6, 8, 3], ov.Type.f16, name="d")
        g = o.gather(d, o.constant(np.array([[0, 5], [-1, 2]], np.int64)), o.constant(np.int64(1)), 0)
        s = o.slice(g, o.constant(np.array([0], np.int64)), o.constant(np.array([-1], np.int64)),
                    o.constant(np.array([2], np.int64)), o.constant(np.array([2], np.int64)))
        return ov.Model([o.result(s)], [d])

    def dynamic_strided():
        d = o.parameter(ov.PartialShape([-1, 7, ov.Dimension(2, 9)]), ov.Type.i32, name="d")
        s = o.strided_slice(d, o.constant(np.array([0, 1, 0], np.int64)), o.constant(np.array([0, -1, 0], np.int64)),
                            o.constant(np.array([1, 2, 1], np.int64)), [1, 0, 1], [1, 0, 1])
        return ov.Model([o.result(o.shape_of(s)), o.result(s)], [d])

    def slice_scatter_nd():
        d = o.parameter([8, 4], ov.Type.f32, name="d")
        u = o.parameter([4, 4], ov.Type.f32, name="u")
        ss = o.slice_scatter(d, u, o.constant(np.array([0], np.int64)), o.constant(np.array([8], np.int64)),
                             o.constant(np.array([2], np.int64)), o.constant(np.array([0], np.int64)))
        nd = o.scatter_nd_update(ss, o.constant(np.array([[1], [-1]], np.int64)), o.constant(np.ones((2, 4), np.float32)),
                                 "sum")
        return ov.Model([o.result(nd)], [d, u])

    return {"scatter_elements": scatter_elements, "gather_slice": gather_slice, "dynamic_strided": dynamic_strided,
            "slice_scatter_nd": slice_scatter_nd}


@pytest.mark.parametrize("version", ["v10", "v11"])
@pytest.mark.parametrize("name", ["scatter_elements", "gather_slice", "dynamic_strided", "slice_scatter_nd"])
def test_openvino_serialized_models_are_clean(tmp_path, name, version):
    xml = save_ov(_openvino_models()[name](), tmp_path, name, version)
    report = irscatter.validate(xml)
    assert report.findings == [], [(f.code, f.message) for f in report.findings]


def test_validate_reports_what_run_refuses_for_size(tmp_path):
    """One pass serves both: a Parameter too large to allocate is a finding, as run refuses it."""
    from helpers import net, param, result, write

    xml = write(tmp_path, net([param(0, "x", [1000000, 1000000]), result(1, "r", [1000000, 1000000])], [(0, 0, 1, 0)]))
    report = irscatter.validate(xml)
    assert [f.code for f in report.errors] == ["tensor-limit"]
    with pytest.raises(irscatter.IRError) as info:
        irscatter.compile_model(xml)
    assert info.value.label == "tensor-limit"


def test_a_refused_const_inside_a_body_is_a_finding_of_the_outer_layer(tmp_path):
    """Read with its defects collected, a Const of element type dynamic is left without data;
    the body compiled for its Loop must say so rather than fail while planning."""
    import helpers

    data = Path(__file__).resolve().parent / "data" / "control"
    path = helpers.edited_copy(tmp_path, data / "loop_while.xml", 'element_type="f32" shape=""',
                               'element_type="dynamic" shape=""')
    report = irscatter.validate(path)
    codes = {f.code for f in report.findings}
    assert "const-attribute" in codes and "const-data" in codes, report.findings
