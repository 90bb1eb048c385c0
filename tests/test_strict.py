"""Strict mode: each use of behaviour the spec leaves undefined is reported, with the layer, the
port and the positions, by `run(strict=True)`, `validate(strict=True)` and the CLI's --strict;
outputs never change, and without strict nothing is reported."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import cli, layer, net, one_layer_ir, param, port, result, write

import irscatter
from irscatter.checks.conformance import finding_line
from irscatter.ir.element_types import ElementType as ET
from irscatter.ir.writer import IRWriter
from irscatter.ops.common import strict

I32_MIN = np.iinfo(np.int32).min


def run_strict(tmp_path: Path, type_: str, version: str, attrs: dict, inputs: list[tuple[str, np.ndarray]],
               out_shape: tuple[int, ...], out_dtype=np.float32):
    """One layer run twice, strict and not: the strict outputs with their findings, after checking
    that the plain run computes the same and reports nothing."""
    xml = one_layer_ir(tmp_path, type_, version, attrs, inputs, [(out_shape, out_dtype)])
    model = irscatter.read_model(xml)
    feeds = {name: value for name, value in inputs}
    plain = model.run(dict(feeds))
    checked = model.run(dict(feeds), strict=True)
    assert plain.findings == ()
    for name in plain:
        np.testing.assert_array_equal(plain[name], checked[name])
    return checked


def codes(outputs) -> list[str]:
    return [f.code for f in outputs.findings]


# --- duplicate indices without a reduction --------------------------------------------------------


def test_scatter_update_duplicates_name_the_positions_and_the_slice(tmp_path):
    out = run_strict(tmp_path, "ScatterUpdate", "opset3", {},
                     [("data", np.zeros((4, 3), np.float32)), ("indices", np.array([2, 0, 2, 1, 0], np.int64)),
                      ("updates", np.arange(15, dtype=np.float32).reshape(5, 3)), ("axis", np.array(0, np.int64))],
                     (4, 3))
    [finding] = out.findings
    assert finding.severity == "warning" and finding.code == "duplicate-indices"
    assert finding.port == "input 1" and finding.layer.name == "under_test" and finding.line is not None
    assert "indices[0] and indices[2] both write data[2, :]" in finding.message
    assert "indices[1] and indices[4] both write data[0, :]" in finding.message
    assert "keeps the last" in finding.message
    np.testing.assert_array_equal(out[0][2], [6, 7, 8])  # the documented choice is unchanged


def test_scatter_update_along_an_inner_axis_names_the_slice(tmp_path):
    out = run_strict(tmp_path, "ScatterUpdate", "opset3", {},
                     [("data", np.zeros((2, 4), np.float32)), ("indices", np.array([[3, 3]], np.int32)),
                      ("updates", np.ones((2, 1, 2), np.float32)), ("axis", np.array(1, np.int64))], (2, 4))
    assert "indices[0, 0] and indices[0, 1] both write data[:, 3]" in out.findings[0].message


def test_clean_indices_report_nothing(tmp_path):
    out = run_strict(tmp_path, "ScatterUpdate", "opset3", {},
                     [("data", np.zeros((4, 3), np.float32)), ("indices", np.array([3, 0, 2], np.int64)),
                      ("updates", np.ones((3, 3), np.float32)), ("axis", np.array(0, np.int64))], (4, 3))
    assert out.findings == []


@pytest.mark.parametrize("version, attrs", [("opset3", {}), ("opset12", {"reduction": "none"})])
def test_scatter_elements_duplicates(tmp_path, version, attrs):
    out = run_strict(tmp_path, "ScatterElementsUpdate", version, attrs,
                     [("data", np.zeros((2, 3), np.float32)), ("indices", np.array([[1, 1, 0], [2, 0, 2]], np.int64)),
                      ("updates", np.ones((2, 3), np.float32)), ("axis", np.array(1, np.int64))], (2, 3))
    [finding] = out.findings
    assert "indices[0, 0] and indices[0, 1] both write data[0, 1]" in finding.message
    assert "indices[1, 0] and indices[1, 2] both write data[1, 2]" in finding.message


def test_scatter_elements_12_wraps_negatives_before_comparing(tmp_path):
    out = run_strict(tmp_path, "ScatterElementsUpdate", "opset12", {"reduction": "none"},
                     [("data", np.zeros(3, np.float32)), ("indices", np.array([2, -1], np.int64)),
                      ("updates", np.ones(2, np.float32)), ("axis", np.array(0, np.int64))], (3,))
    assert "indices[0] and indices[1] both write data[2]" in out.findings[0].message


def test_a_reduction_folds_duplicates_in_and_is_not_reported(tmp_path):
    out = run_strict(tmp_path, "ScatterElementsUpdate", "opset12", {"reduction": "sum"},
                     [("data", np.zeros(3, np.float32)), ("indices", np.array([1, 1], np.int64)),
                      ("updates", np.ones(2, np.float32)), ("axis", np.array(0, np.int64))], (3,))
    assert out.findings == []


@pytest.mark.parametrize("version, attrs", [("opset4", {}), ("opset15", {"reduction": "none"})])
def test_scatter_nd_duplicates(tmp_path, version, attrs):
    out = run_strict(tmp_path, "ScatterNDUpdate", version, attrs,
                     [("data", np.zeros((3, 2), np.float32)), ("indices", np.array([[1], [0], [1], [1]], np.int64)),
                      ("updates", np.ones((4, 2), np.float32))], (3, 2))
    [finding] = out.findings
    assert "indices[0], indices[2], indices[3] all write data[1, :]" in finding.message


def test_scatter_nd_15_with_a_reduction_is_clean(tmp_path):
    out = run_strict(tmp_path, "ScatterNDUpdate", "opset15", {"reduction": "max"},
                     [("data", np.zeros(3, np.float32)), ("indices", np.array([[1], [1]], np.int64)),
                      ("updates", np.ones(2, np.float32))], (3,))
    assert out.findings == []


def test_many_duplicates_are_counted_not_listed(tmp_path):
    indices = np.repeat(np.arange(6, dtype=np.int64), 5)
    out = run_strict(tmp_path, "ScatterNDUpdate", "opset4", {},
                     [("data", np.zeros(6, np.float32)), ("indices", indices.reshape(-1, 1)),
                      ("updates", np.ones(30, np.float32))], (6,))
    message = out.findings[0].message
    assert "indices[0], indices[1], indices[2] and 2 more all write data[0]" in message
    assert "3 more places are written more than once" in message


@pytest.mark.parametrize("indices, updates, where", [
    (np.array([1, 1], np.int32), np.ones((2, 2), np.float32), "indices[0] and indices[1] both write output[1, :]"),
    (np.array([[1, 0], [1, 0]], np.int32), np.ones((2, 2), np.float32),
     "indices[0, 0] and indices[1, 0] both write output[1, 0]"),
])
def test_bnns_scatter_duplicates_in_both_modes(tmp_path, indices, updates, where):
    out = run_strict(tmp_path, "BNNSScatter", "irscatter1", {"axis": 0, "reduction": "none"},
                     [("output", np.zeros((2, 2), np.float32)), ("indices", indices), ("input", updates)], (2, 2))
    assert where in out.findings[0].message


def test_hlo_scatter_replace_duplicates(tmp_path):
    attrs = {"update_window_dims": "", "inserted_window_dims": "0", "scatter_dims_to_operand_dims": "0",
             "index_vector_dim": 1}
    inputs = [("operand", np.zeros(4, np.float32)), ("scatter_indices", np.array([[0], [2], [0]], np.int64)),
              ("updates", np.array([1, 2, 3], np.float32))]
    out = run_strict(tmp_path, "HloScatter", "irscatter1", attrs, inputs, (4,))
    assert "updates[0] and updates[2] both write operand[0]" in out.findings[0].message
    assert out.findings[0].port == "input 1"
    summed = run_strict(tmp_path, "HloScatter", "irscatter1", {**attrs, "update_computation": "add"}, inputs, (4,))
    assert summed.findings == []


# --- indices outside the range the spec expects ---------------------------------------------------


def test_gather_1_reports_negative_and_zero_filled_indices(tmp_path):
    out = run_strict(tmp_path, "Gather", "opset1", {},
                     [("data", np.arange(4, dtype=np.float32)), ("indices", np.array([0, -1, 7, 2], np.int64)),
                      ("axis", np.array(0, np.int64))], (4,))
    assert codes(out) == ["negative-index", "gather-zero-fill"]
    assert "negative index -1 at [1]" in out.findings[0].message
    assert "index outside [-4, 3] 7 at [2]" in out.findings[1].message


def test_gather_8_defines_both_and_reports_nothing(tmp_path):
    out = run_strict(tmp_path, "Gather", "opset8", {"batch_dims": 0},
                     [("data", np.arange(4, dtype=np.float32)), ("indices", np.array([-1, 7], np.int64)),
                      ("axis", np.array(0, np.int64))], (2,))
    assert out.findings == []


def test_gather_elements_and_gather_nd_report_negative_indices(tmp_path):
    out = run_strict(tmp_path, "GatherElements", "opset6", {"axis": 0},
                     [("data", np.arange(3, dtype=np.float32)), ("indices", np.array([-3, 1], np.int64))], (2,))
    assert codes(out) == ["negative-index"]
    out = run_strict(tmp_path, "GatherND", "opset8", {"batch_dims": 0},
                     [("data", np.arange(6, dtype=np.float32).reshape(2, 3)),
                      ("indices", np.array([[0, -1], [1, 2]], np.int64))], (2,))
    assert codes(out) == ["negative-index"] and "-1 at [0, 1]" in out.findings[0].message


def test_block_sparse_attention_reports_blocks_outside_the_visible_ones_and_repeated(tmp_path):
    """BlockSparseAttention (extension): a block at or after the query's own complete ones, or
    listed twice in one row, is undefined on the page; the ones past the count are not read."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((1, 1, 2, 2), (1, 1, 6, 2), (1, 1, 6, 2)))
    indices = np.array([[[[2, 0, 9], [1, 1, 9]]]], np.int32)  # the queries at 4 and 5 see blocks 0-1 and 0-2
    count = np.array([[[2, 2]]], np.int32)
    out = run_strict(tmp_path, "BlockSparseAttention", "extension", {"compress_ratio": 2},
                     [("query", q), ("key", k), ("value", v), ("block_indices", indices), ("block_count", count)],
                     (1, 1, 2, 2))
    assert codes(out) == ["sparse-block-range", "sparse-block-repeated"]
    assert "block index 2 at [0, 0, 0, 0]" in out.findings[0].message
    assert "1 at [0, 0, 1, 1]" in out.findings[1].message and out.findings[1].port == "input 3"


def test_one_hot_1_reports_negative_indices_and_16_does_not(tmp_path):
    inputs = [("indices", np.array([1, -1], np.int64)), ("depth", np.array(3, np.int64)),
              ("on_value", np.array(1, np.float32)), ("off_value", np.array(0, np.float32))]
    assert codes(run_strict(tmp_path, "OneHot", "opset1", {"axis": -1}, inputs, (2, 3))) == ["negative-index"]
    assert codes(run_strict(tmp_path, "OneHot", "opset16", {"axis": -1}, inputs, (2, 3))) == []


# --- integer arithmetic, conversion and empty reductions ------------------------------------------


@pytest.mark.parametrize("type_, a, b, shown", [
    ("Add", np.array([np.iinfo(np.int32).max, 1], np.int32), np.array([1, 1], np.int32), "[0] (2147483647 + 1)"),
    ("Subtract", np.array([0, 5], np.uint8), np.array([1, 2], np.uint8), "[0] (0 - 1)"),
    ("Multiply", np.array([2**62, 3], np.int64), np.array([4, 3], np.int64), "(4611686018427387904 * 4)"),
    ("Multiply", np.array([-1, 2], np.int64), np.array([np.iinfo(np.int64).min, 2], np.int64), "[0] (-1 *"),
    ("Divide", np.array([I32_MIN, 4], np.int32), np.array([-1, 2], np.int32), "(-2147483648 / -1)"),
    ("FloorMod", np.array([I32_MIN, 4], np.int32), np.array([-1, 3], np.int32), "floor-mod"),
    ("Mod", np.array([I32_MIN, 4], np.int32), np.array([-1, 3], np.int32), "mod"),
])
def test_integer_overflow(tmp_path, type_, a, b, shown):
    out = run_strict(tmp_path, type_, "opset1", {}, [("a", a), ("b", b)], a.shape, a.dtype)
    [finding] = out.findings
    assert finding.code == "integer-overflow" and shown in finding.message


def test_arithmetic_in_range_and_floats_are_clean(tmp_path):
    a = np.array([np.iinfo(np.int64).max - 1, -5], np.int64)
    assert run_strict(tmp_path, "Add", "opset1", {}, [("a", a), ("b", np.array([1, 5], np.int64))],
                      (2,), np.int64).findings == []
    assert run_strict(tmp_path, "Multiply", "opset1", {}, [("a", a), ("b", np.array([1, -1], np.int64))],
                      (2,), np.int64).findings == []
    big = np.array([1.5e38], np.float32)
    assert run_strict(tmp_path, "Add", "opset1", {}, [("a", big), ("b", big)], (1,)).findings == []


def test_shift_counts_outside_the_width(tmp_path):
    out = run_strict(tmp_path, "BitwiseLeftShift", "opset15", {},
                     [("a", np.array([1, 1, 1], np.int8)), ("b", np.array([3, 8, -1], np.int8))], (3,), np.int8)
    [finding] = out.findings
    assert finding.code == "shift-count" and finding.port == "input 1"
    assert "8 at [1], -1 at [2]" in finding.message


def test_convert_of_unrepresentable_floats(tmp_path):
    out = run_strict(tmp_path, "Convert", "opset1", {"destination_type": "u8"},
                     [("data", np.array([255.9, 256.0, -0.5, -1.0, np.nan], np.float32))], (5,), np.uint8)
    [finding] = out.findings
    assert finding.code == "convert-range"
    assert "256.0 at [1], -1.0 at [3], nan at [4]" in finding.message


def test_convert_to_i4_reports_the_values_past_its_own_range(tmp_path):
    """Not the range of the byte that holds an i4 value."""
    import ml_dtypes

    out = run_strict(tmp_path, "Convert", "opset1", {"destination_type": "i4"},
                     [("data", np.array([7.9, 8.5, -8.0, -9.0], np.float32))], (4,), ml_dtypes.int4)
    [finding] = out.findings
    assert finding.code == "convert-range" and "8.5 at [1], -9.0 at [3]" in finding.message
    assert "low bits" in finding.message and out[0].astype(int).tolist() == [7, -8, -8, 7]


def test_reduce_max_over_an_empty_axis(tmp_path):
    inputs = [("data", np.zeros((2, 0), np.float32)), ("axes", np.array([1], np.int64))]
    out = run_strict(tmp_path, "ReduceMax", "opset1", {"keep_dims": "false"}, inputs, (2,))
    assert codes(out) == ["empty-reduction"]
    assert run_strict(tmp_path, "ReduceSum", "opset1", {"keep_dims": "false"}, inputs, (2,)).findings == []


def test_a_scalar_prelu_slope_runs_and_is_reported_as_a_departure(tmp_path):
    """OpenVINO writes a rank-0 slope for leaky_relu, which the spec (rank >= 1) does not allow."""
    data = np.array([[-2, 3], [4, -8]], np.float32)
    out = run_strict(tmp_path, "PRelu", "opset1", {}, [("data", data), ("slope", np.array(0.5, np.float32))], (2, 2))
    [finding] = out.findings
    assert finding.code == "slope-rank" and finding.port == "input 1" and "scalar" in finding.message
    assert out[0].tolist() == [[-1, 3], [4, -4]]
    assert run_strict(tmp_path, "PRelu", "opset1", {},
                      [("data", data), ("slope", np.array([0.5], np.float32))], (2, 2)).findings == []


def test_a_sequence_length_of_zero_runs_and_is_reported_as_a_departure(tmp_path):
    """An ONNX-converted ReverseSequence may hold a length of 0, which OpenVINO reads as 1."""
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run_strict(tmp_path, "ReverseSequence", "opset1", {"batch_axis": 0, "seq_axis": 1},
                     [("data", data), ("seq_lengths", np.array([0, 3], np.int32))], (2, 3))
    [finding] = out.findings
    assert finding.code == "seq_lengths-zero" and finding.port == "input 1" and "0 at [0]" in finding.message
    assert out[0].tolist() == [[0, 1, 2], [5, 4, 3]]


def test_a_boolean_cum_sum_runs_and_is_reported_as_a_departure(tmp_path):
    """A converted `mask.cumsum(...)` keeps the boolean type, which the spec does not allow; the
    counts above 1 are where OpenVINO's byte holds what irscatter's boolean cannot."""
    data = np.array([[False, True, False, True, True], [False, False, True, False, False]])
    out = run_strict(tmp_path, "CumSum", "opset3", {}, [("data", data), ("axis", np.array(1, np.int64))],
                     (2, 5), np.bool_)
    assert [(f.code, f.port) for f in out.findings] == [("boolean-data", "input 0"), ("boolean-count", "input 0")]
    assert "running count 2 at [0, 3], 3 at [0, 4];" in out.findings[1].message
    assert out[0].tolist() == [[False, True, True, True, True], [False, False, True, True, True]]
    one_each = run_strict(tmp_path, "CumSum", "opset3", {}, [("data", data[1:]), ("axis", np.array(1, np.int64))],
                          (1, 5), np.bool_)
    assert codes(one_each) == ["boolean-data"]


def test_validate_strict_reports_a_boolean_cum_sum_by_its_type(tmp_path):
    """The data is unknown and the axis a Const, as converted models write it: the type decides."""
    writer = IRWriter("mask")
    x = writer.parameter("x", ET.boolean, (2, 3), ("x",))
    [sums] = writer.layer("CumSum", "opset3", [x, writer.const("axis", np.array(-1, np.int64))],
                          [(ET.boolean, (2, 3)), (ET.i64, ())], [(ET.boolean, (2, 3))], name="under_test")
    writer.result("out", sums, ET.boolean, (2, 3))
    xml = writer.save(tmp_path / "mask.xml")
    assert irscatter.validate(xml).findings == []
    report = irscatter.validate(xml, strict=True)
    assert [(f.code, f.layer.name) for f in report.strict_findings] == [("boolean-data", "under_test")]


def test_validate_strict_reports_a_constant_scalar_prelu_slope(tmp_path):
    layers = [param(0, "x", [2, 2]),
              layer(1, "slope", "Const", data={"element_type": "f32", "shape": "", "offset": 0, "size": 4},
                    outputs=[port(0, "FP32", [])]),
              layer(2, "leaky", "PRelu", inputs=[port(0, "FP32", [2, 2]), port(1, "FP32", [])],
                    outputs=[port(2, "FP32", [2, 2])]),
              result(3, "r", [2, 2])]
    xml = write(tmp_path, net(layers, [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)]), np.float32(0.01).tobytes())
    assert irscatter.validate(xml).findings == []
    report = irscatter.validate(xml, strict=True)
    assert [(f.code, f.layer.name, f.port) for f in report.strict_findings] == [("slope-rank", "leaky", "input 1")]


# --- the mechanism --------------------------------------------------------------------------------


def test_strict_mode_is_off_unless_asked():
    assert not strict.active()
    collector = strict.Collector()
    with strict.collecting(collector):
        assert strict.active()
        strict.report(label="duplicate-indices", message="outside any layer")
    assert not strict.active()
    assert [f.message for f in collector.findings] == ["outside any layer"]
    strict.report(label="duplicate-indices", message="nobody listens")  # off: a no-op


def test_a_kernel_off_strict_mode_never_builds_a_message(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(strict, "report_duplicates", lambda *a, **k: calls.append(a))
    run_strict(tmp_path, "ScatterUpdate", "opset3", {},
               [("data", np.zeros((2, 2), np.float32)), ("indices", np.array([1, 1], np.int64)),
                ("updates", np.ones((2, 2), np.float32)), ("axis", np.array(0, np.int64))], (2, 2))
    assert len(calls) == 1  # the strict run only


def _if_with_scatter_inside(tmp_path: Path) -> Path:
    """An If whose then-body scatters the outer feeds with ScatterUpdate; the else-body passes data."""
    dims, idx_dims = (3, 2), (2,)
    then_body = net([
        param(0, "t_data", dims), param(1, "t_indices", idx_dims, "i64", "I64"),
        param(2, "t_updates", (2, 2)), param(3, "t_axis", (), "i64", "I64"),
        layer(4, "inner_scatter", "ScatterUpdate", "opset3",
              inputs=[port(0, "FP32", dims), port(1, "I64", idx_dims), port(2, "FP32", (2, 2)), port(3, "I64")],
              outputs=[port(4, "FP32", dims)]),
        result(5, "t_out", dims),
    ], [(0, 0, 4, 0), (1, 0, 4, 1), (2, 0, 4, 2), (3, 0, 4, 3), (4, 4, 5, 0)])
    else_body = net([param(0, "e_data", dims), result(1, "e_out", dims)], [(0, 0, 1, 0)])

    def body(tag: str, text: str) -> str:
        inner = text.split("<layers>", 1)[1].rsplit("</edges>", 1)[0]
        return f"<{tag}><layers>{inner}</edges></{tag}>"

    maps = ('<then_port_map><input external_port_id="1" internal_layer_id="0"/>'
            '<input external_port_id="2" internal_layer_id="1"/><input external_port_id="3" internal_layer_id="2"/>'
            '<input external_port_id="4" internal_layer_id="3"/><output external_port_id="5" internal_layer_id="5"/>'
            '</then_port_map><else_port_map><input external_port_id="1" internal_layer_id="0"/>'
            '<output external_port_id="5" internal_layer_id="1"/></else_port_map>')
    outer_if = layer(5, "outer_if", "If", "opset8",
                     inputs=[port(0, "BOOL"), port(1, "FP32", dims), port(2, "I64", idx_dims), port(3, "FP32", (2, 2)),
                             port(4, "I64")], outputs=[port(5, "FP32", dims)])
    outer_if = outer_if[: -len("</layer>")] + maps + body("then_body", then_body) + body("else_body", else_body) \
        + "</layer>"
    xml = net([param(0, "cond", (), "boolean", "BOOL"), param(1, "data", dims),
               param(2, "indices", idx_dims, "i64", "I64"), param(3, "updates", (2, 2)), param(4, "axis", (), "i64", "I64"), outer_if, result(6, "out", dims)],
              [(0, 0, 5, 0), (1, 0, 5, 1), (2, 0, 5, 2), (3, 0, 5, 3), (4, 0, 5, 4), (5, 5, 6, 0)])
    return write(tmp_path, xml, name="if_scatter")


def test_a_finding_inside_a_body_names_the_outer_and_the_inner_layer(tmp_path):
    model = irscatter.read_model(_if_with_scatter_inside(tmp_path))
    feeds = {"cond": np.array(True), "data": np.zeros((3, 2), np.float32), "indices": np.array([1, 1], np.int64),
             "updates": np.ones((2, 2), np.float32), "axis": np.array(0, np.int64)}
    [finding] = model.run(feeds, strict=True).findings
    assert finding.layer.name == "outer_if" and finding.code == "duplicate-indices"
    assert finding.message.startswith('in <then_body>, layer 4 "inner_scatter" (ScatterUpdate-3) input 1 (line ')
    assert "indices[0] and indices[1] both write data[1, :]" in finding.message
    assert model.run({**feeds, "cond": np.array(False)}, strict=True).findings == []  # the else body scatters nothing


# --- validate --strict: constants decide without a run --------------------------------------------


def _scatter_with_constant_indices(tmp_path: Path, indices: list[int]) -> Path:
    """ScatterUpdate whose data and updates are fed and whose indices and axis are Consts."""
    weights = np.array(indices, np.int64).tobytes() + np.array(0, np.int64).tobytes()
    n = len(indices)
    xml = net([
        param(0, "data", (4, 2)),
        layer(1, "indices", "Const", data={"element_type": "i64", "shape": str(n), "offset": 0, "size": 8 * n},
              outputs=[port(0, "I64", (n,))]),
        param(2, "updates", (n, 2)),
        layer(3, "axis", "Const", data={"element_type": "i64", "shape": "", "offset": 8 * n, "size": 8},
              outputs=[port(0, "I64")]),
        layer(4, "scatter", "ScatterUpdate", "opset3",
              inputs=[port(0, "FP32", (4, 2)), port(1, "I64", (n,)), port(2, "FP32", (n, 2)), port(3, "I64")],
              outputs=[port(4, "FP32", (4, 2))]),
        result(5, "out", (4, 2)),
    ], [(0, 0, 4, 0), (1, 0, 4, 1), (2, 0, 4, 2), (3, 0, 4, 3), (4, 4, 5, 0)])
    return write(tmp_path, xml, weights, name="const_indices")


def test_validate_strict_reports_constant_duplicates_without_running(tmp_path):
    xml = _scatter_with_constant_indices(tmp_path, [3, 0, 3])
    plain = irscatter.validate(xml)
    assert plain.findings == [] and plain.strict_findings == []
    report = irscatter.validate(xml, strict=True)
    [finding] = report.strict_findings
    assert report.findings == [finding] and report.ok
    assert finding.layer.name == "scatter" and finding.port == "input 1"
    assert "indices[0] and indices[2] both write data[3, :]" in finding.message
    assert irscatter.validate(_scatter_with_constant_indices(tmp_path, [3, 0, 2]), strict=True).findings == []


def test_validate_strict_keeps_only_what_the_constants_decide(tmp_path):
    """Add of a constant and a fed i32: overflow depends on the fed value, so the probe, which
    stands zeros in for it, must not report one even when zeros would not overflow either."""
    weights = np.array([np.iinfo(np.int32).max], np.int32).tobytes()
    xml = net([
        param(0, "x", (1,), "i32", "I32"),
        layer(1, "big", "Const", data={"element_type": "i32", "shape": "1", "offset": 0, "size": 4},
              outputs=[port(0, "I32", (1,))]),
        layer(2, "sum", "Add", data={"auto_broadcast": "numpy"}, inputs=[port(0, "I32", (1,)), port(1, "I32", (1,))],
              outputs=[port(2, "I32", (1,))]),
        result(3, "out", (1,), "I32"),
    ], [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0)])
    path = write(tmp_path, xml, weights, name="add_const")
    assert irscatter.validate(path, strict=True).strict_findings == []
    outputs = irscatter.read_model(path).run({"x": np.array([1], np.int32)}, strict=True)
    assert codes(outputs) == ["integer-overflow"]


# --- the command line -----------------------------------------------------------------------------


def _scatter_with_feeds(tmp_path, rows):
    """A ScatterNDUpdate-4 of two updates into the rows `rows` of three zeros, and its feeds."""
    indices = np.array([[r] for r in rows], np.int64)
    xml = one_layer_ir(tmp_path, "ScatterNDUpdate", "opset4", {},
                       [("data", np.zeros(3, np.float32)), ("indices", indices),
                        ("updates", np.ones(2, np.float32))], [((3,), np.float32)])
    feeds = tmp_path / "feeds.npz"
    np.savez(feeds, data=np.zeros(3, np.float32), indices=indices, updates=np.array([1, 2], np.float32))
    return xml, feeds


def test_cli_run_strict_prints_findings_on_stderr_and_exits_1(tmp_path):
    xml, feeds = _scatter_with_feeds(tmp_path, [1, 1])
    done = cli("run", str(xml), "--inputs", str(feeds), "--strict")
    assert done.returncode == 1, done.stderr
    assert "out0: float32 [3]" in done.stdout
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"{xml}:") and ": warning: " in line and line.endswith("[duplicate-indices]")
    assert "indices[0] and indices[1] both write data[1]" in line
    model = irscatter.read_model(xml)
    expected = model.run(dict(np.load(feeds)), strict=True).findings[0]
    assert line == finding_line(expected, model.source)
    plain = cli("run", str(xml), "--inputs", str(feeds))
    assert plain.returncode == 0 and plain.stderr == "" and plain.stdout == done.stdout


def test_cli_run_strict_exits_0_on_a_clean_run(tmp_path):
    xml, feeds = _scatter_with_feeds(tmp_path, [1, 2])
    done = cli("run", str(xml), "--inputs", str(feeds), "--strict")
    assert done.returncode == 0 and done.stderr == ""


def test_cli_run_strict_refuses_what_it_cannot_check(tmp_path):
    xml = _scatter_with_constant_indices(tmp_path, [1, 2])
    done = cli("run", str(xml), "--random", "--strict", "--profile")
    assert done.returncode != 0 and "--strict" in done.stderr


def test_cli_validate_strict(tmp_path):
    xml = _scatter_with_constant_indices(tmp_path, [0, 0])
    assert cli("validate", str(xml)).returncode == 0
    done = cli("validate", str(xml), "--strict")
    assert done.returncode == 1
    assert "[duplicate-indices]" in done.stdout and "0 errors, 1 warning" in done.stdout
    as_json = json.loads(cli("validate", str(xml), "--strict", "--json").stdout)
    assert as_json["ok"] is True and as_json["passed"] is False and as_json["strict"] == 1  # as the exit status
    clean = cli("validate", str(_scatter_with_constant_indices(tmp_path, [0, 1])), "--strict")
    assert clean.returncode == 0 and "no findings" in clean.stdout


# --- PagedGatedDeltaNet's block table ---------------------------------------------------------------


def _paged_delta_step(sequences):
    """PagedGatedDeltaNet's inputs for `sequences`: (past, new tokens, interval, blocks) each."""
    rng = np.random.default_rng(0)
    tokens = sum(new for _, new, _, _ in sequences)
    arrays = [rng.standard_normal(shape).astype(np.float32)
              for shape in ((tokens, 1, 2), (tokens, 1, 2), (tokens, 1, 2), (6, 1, 2, 2), (tokens, 1), (tokens, 1))]
    arrays += [np.cumsum([0] + [n for _, n, _, _ in sequences]).astype(np.int32),
               np.array([b for *_, own in sequences for b in own], np.int32),
               np.cumsum([0] + [len(own) for *_, own in sequences]).astype(np.int32),
               np.array([p for p, *_ in sequences], np.int32), np.array([i for _, _, i, _ in sequences], np.int32)]
    from irscatter.ops.internal.paged_gated_delta_net import PagedGatedDeltaNet

    return list(zip(PagedGatedDeltaNet.inputs, arrays)), (tokens, 1, 2)


@pytest.mark.parametrize(("sequences", "label", "shown"), [
    ([(0, 5, 2, [0, 1])], "pgdn-unstored", "stores states into its blocks 1 to 3, but has 2"),
    ([(0, 2, 0, [0, 3]), (0, 1, 0, [3, 4])], "pgdn-shared-block", "sequences [0, 1] all read or write block 3"),
])
def test_paged_gated_delta_net_reports_its_block_table(tmp_path, sequences, label, shown):
    inputs, out_shape = _paged_delta_step(sequences)
    out = run_strict(tmp_path, "PagedGatedDeltaNet", "extension", {}, inputs, out_shape)
    assert codes(out) == [label] and shown in out.findings[0].message
    clean, clean_shape = _paged_delta_step([(0, 5, 2, [0, 1, 2, 3])])
    assert not run_strict(tmp_path, "PagedGatedDeltaNet", "extension", {}, clean, clean_shape).findings
