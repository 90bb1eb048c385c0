"""Dumps of intermediate values, their statistics and the NaN/Inf check (`irscatter.debug.dump`),
through the library and through `irscatter run --dump/--stats/--check-numerics`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from helpers import cli, layer, net, param, port, result, write

import irscatter
from irscatter.debug import dump
from irscatter.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
CONTROL = ROOT / "tests" / "data" / "control"


def _bundled(name: str):
    folder = MODELS / name
    return irscatter.read_model(folder / "model.xml").compile(), dict(np.load(folder / "inputs.npz"))


def _control(name: str):
    return irscatter.read_model(CONTROL / f"{name}.xml").compile(), dict(np.load(CONTROL / f"{name}.npz"))


def _recorded(compiled, feeds):
    """What `run(intermediate=True)` records, on state of its own."""
    return compiled.new_request().run(feeds, intermediate=True)


def _layers_of_type(compiled, type_name: str) -> set[str]:
    """The names of every layer of a type, bodies included."""
    names = set()

    def walk(layers):
        for one in layers:
            if one.type == type_name:
                names.add(one.name)
            for body in one.bodies.values():
                walk(body.graph.layers)
    walk(compiled.model.layers)
    return names


def _layer_of(key: str) -> str:
    """The inner layer name of a key: "loop/body[2]/add:1" -> "add"."""
    return key.rsplit(":", 1)[0].rsplit("/", 1)[-1]


# --- a model built to overflow -----------------------------------------------------------------
#
#   x --> Exp "exp" --> Add "grow" (exp + x) --> Result
#                  \--> Subtract "cancel" (exp - exp, inf - inf is NaN) --> Result
#   Const "negative" [-1, 4] --> Log "log" --> Result


def _overflow_model(folder: Path) -> Path:
    dims = (4,)
    f32 = lambda pid: port(pid, "FP32", dims)  # noqa: E731
    const = np.array([-1.0, 4.0, 1.0, 2.0], np.float32)
    layers = [
        param(0, "x", dims),
        layer(1, "exp", "Exp", inputs=[f32(0)], outputs=[f32(1)]),
        layer(2, "grow", "Add", data={"auto_broadcast": "numpy"}, inputs=[f32(0), f32(1)], outputs=[f32(2)]),
        layer(3, "cancel", "Subtract", data={"auto_broadcast": "numpy"}, inputs=[f32(0), f32(1)], outputs=[f32(2)]),
        layer(4, "negative", "Const", data={"element_type": "f32", "shape": "4", "offset": "0", "size": "16"},
              outputs=[f32(0)]),
        layer(5, "log", "Log", inputs=[f32(0)], outputs=[f32(1)]),
        result(6, "grown", dims), result(7, "cancelled", dims), result(8, "logged", dims),
    ]
    edges = [(0, 0, 1, 0), (1, 1, 2, 0), (0, 0, 2, 1), (1, 1, 3, 0), (1, 1, 3, 1), (4, 0, 5, 0),
             (2, 2, 6, 0), (3, 2, 7, 0), (5, 1, 8, 0)]
    return write(folder, net(layers, edges), const.tobytes())


FINITE_X = np.array([0.0, 1.0, 100.0, 1000.0], np.float32)  # exp(100) is beyond f32: +inf


@pytest.fixture
def overflow(tmp_path):
    return _overflow_model(tmp_path)


# --- dumps --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["small_cnn", "transformer_block", "lstm_sequence"])
def test_a_full_dump_holds_what_intermediate_records(name):
    compiled, feeds = _bundled(name)
    recorded = _recorded(compiled, feeds)
    dumped = dump.dump_tensors(compiled.new_request(), feeds)
    assert set(dumped.tensors) == set(recorded)
    for key, value in recorded.items():
        np.testing.assert_array_equal(dumped.tensors[key], value)
    assert list(dumped.outputs) == [spec.name for spec in compiled.outputs]
    assert set(dumped.arrays()) == set(recorded) | set(dumped.outputs)


@pytest.mark.parametrize("name", ["loop_scan", "if_loop_inside", "ti_pairs", "loop_while", "if_fed"])
def test_a_full_dump_holds_the_values_inside_bodies(name):
    compiled, feeds = _control(name)
    recorded = _recorded(compiled, feeds)
    dumped = dump.dump_tensors(compiled.new_request(), feeds).tensors
    assert set(dumped) == set(recorded)
    assert any("/" in key for key in dumped)
    for key, value in recorded.items():
        np.testing.assert_array_equal(dumped[key], value)


def test_the_order_is_the_run_order_with_each_value_before_its_readers():
    compiled, feeds = _bundled("small_cnn")
    keys = list(dump.dump_tensors(compiled, feeds).tensors)
    assert keys[:3] == ["x:0", "conv1.weight:0", "Convolution_4:2"]
    assert keys[-1] == "Softmax_40:1"


def test_a_pattern_selects_layers_by_name():
    compiled, feeds = _bundled("small_cnn")
    dumped = dump.dump_tensors(compiled, feeds, dump.select(compiled, layers=r"^(Relu|bn\.)"))
    expected = [key for key in _recorded(compiled, feeds) if _layer_of(key).startswith(("Relu", "bn."))]
    assert sorted(dumped.tensors) == sorted(expected) and len(expected) == 7
    assert "Softmax_40:1" not in dumped.tensors and set(dumped.outputs) == {spec.name for spec in compiled.outputs}


def test_types_select_layers_by_op_type_and_version():
    compiled, feeds = _bundled("small_cnn")
    recorded = _recorded(compiled, feeds)
    for types in ("Convolution,MaxPool", ["Convolution", "MaxPool"], "Convolution-1, MaxPool"):
        dumped = dump.dump_tensors(compiled, feeds, dump.select(compiled, types=types)).tensors
        wanted = _layers_of_type(compiled, "Convolution") | _layers_of_type(compiled, "MaxPool")
        assert sorted(dumped) == sorted(key for key in recorded if _layer_of(key) in wanted)
        assert "MaxPool_9:2" in dumped  # every output port of a chosen layer


def test_parameters_and_consts_are_layers_too():
    compiled, feeds = _bundled("small_cnn")
    dumped = dump.dump_tensors(compiled, feeds, dump.select(compiled, types="Parameter,Const")).tensors
    consts = _layers_of_type(compiled, "Const")
    assert set(dumped) == {"x:0"} | {f"{name}:0" for name in consts}
    np.testing.assert_array_equal(dumped["x:0"], feeds["x"])


def test_pattern_and_types_together_select_what_both_allow():
    compiled, feeds = _bundled("transformer_block")
    recorded = _recorded(compiled, feeds)
    matmuls = _layers_of_type(compiled, "MatMul")
    chosen = sorted(matmuls)[0]
    dumped = dump.dump_tensors(compiled, feeds, dump.select(compiled, layers=f"^{chosen}$", types="MatMul")).tensors
    assert list(dumped) == [key for key in recorded if _layer_of(key) == chosen]


def test_a_pattern_sees_the_body_path_of_a_layer():
    compiled, feeds = _control("loop_scan")
    recorded = _recorded(compiled, feeds)
    dumped = dump.dump_tensors(compiled, feeds, dump.select(compiled, layers=r"/body\[2\]/")).tensors
    expected = [key for key in recorded if "/body[2]/" in key]
    assert sorted(dumped) == sorted(expected) and len(expected) == 8  # its Parameters and Const as well
    for key in expected:
        np.testing.assert_array_equal(dumped[key], recorded[key])


def test_types_reach_into_bodies():
    compiled, feeds = _control("if_loop_inside")
    recorded = _recorded(compiled, feeds)
    for type_name in ("Add", "Parameter", "Const"):
        names = _layers_of_type(compiled, type_name)
        dumped = dump.dump_tensors(compiled, feeds, dump.select(compiled, types=type_name)).tensors
        assert sorted(dumped) == sorted(key for key in recorded if _layer_of(key) in names), type_name


def test_a_body_parameter_no_hook_sees_is_taken_from_the_record(monkeypatch):
    """A body Parameter that only a body Result reads shows in no hook call: the selection is
    then taken from `intermediate=True`, with the same keys, values and order."""
    compiled, feeds = _control("loop_scan")
    selection = dump.select(compiled, types="Parameter,Multiply")
    by_hook = dump.dump_tensors(compiled.new_request(), feeds, selection)
    body_parameter = next(one for one in dump._Scopes(compiled).every_layer() if one.type == "Parameter")
    monkeypatch.setattr(dump._Scopes, "unseen", lambda self: [body_parameter])
    by_record = dump.dump_tensors(compiled.new_request(), feeds, selection)
    assert list(by_record.tensors) == list(by_hook.tensors)
    for key, value in by_hook.tensors.items():
        np.testing.assert_array_equal(by_record.tensors[key], value)
    for name, value in by_hook.outputs.items():
        np.testing.assert_array_equal(by_record.outputs[name], value)


def test_a_selection_of_nothing_keeps_the_outputs():
    compiled, feeds = _bundled("small_cnn")
    dumped = dump.dump_tensors(compiled, feeds, dump.select(compiled, layers="no such layer"))
    assert dumped.tensors == {} and set(dumped.arrays()) == {spec.name for spec in compiled.outputs}


def test_a_bad_pattern_or_an_absent_type_is_refused():
    compiled, _ = _bundled("small_cnn")
    with pytest.raises(UsageError, match="not a regular expression"):
        dump.select(compiled, layers="(")
    with pytest.raises(UsageError, match='no layer of the model is of type "Foo"'):
        dump.select(compiled, types="Convolution,Foo")
    with pytest.raises(UsageError, match=r"no layer of the model is Convolution-3 \(its Convolution layers are Convolution-1\)"):
        dump.select(compiled, types="Convolution-3")
    with pytest.raises(UsageError, match="empty name"):
        dump.select(compiled, types="Convolution,")


# --- statistics ---------------------------------------------------------------------------------


def test_float_stats_leave_nan_and_inf_out_of_the_moments():
    s = dump.tensor_stats(np.array([1, np.nan, np.inf, -np.inf, 0, -0.0, 3], np.float32))
    assert (s.element_type, s.shape, s.size) == ("f32", (7,), 7)
    assert (s.min, s.max, s.mean) == (0.0, 3.0, 1.0)
    assert s.std == pytest.approx(math.sqrt(1.5), rel=1e-15)
    assert (s.nan, s.pos_inf, s.neg_inf, s.zeros, s.true) == (1, 1, 1, 2, None)


def test_float_stats_are_computed_in_f64():
    s = dump.tensor_stats(np.array([65504, 65504], np.float16))  # the f16 sum would overflow
    assert (s.mean, s.std) == (65504.0, 0.0)
    s = dump.tensor_stats(np.array([1, np.inf], ml_dtypes.bfloat16))
    assert (s.element_type, s.min, s.max, s.pos_inf) == ("bf16", 1.0, 1.0, 1)


def test_stats_of_a_tensor_without_finite_values_or_without_values():
    s = dump.tensor_stats(np.full((2, 2), np.nan, np.float64))
    assert (s.min, s.max, s.mean, s.std, s.nan, s.zeros) == (None, None, None, None, 4, 0)
    s = dump.tensor_stats(np.zeros((0, 3), np.float32))
    assert (s.shape, s.size, s.min, s.nan, s.pos_inf, s.zeros) == ((0, 3), 0, None, 0, 0, 0)
    s = dump.tensor_stats(np.zeros((0,), np.int32))
    assert (s.min, s.mean, s.zeros) == (None, None, 0)


def test_integer_stats_are_exact():
    big = np.array([2**62, 2**62, 2**62, -1], np.int64)  # the sum overflows int64
    s = dump.tensor_stats(big)
    assert (s.min, s.max) == (-1, 2**62) and isinstance(s.max, int)
    assert s.mean == (3 * 2**62 - 1) / 4
    s = dump.tensor_stats(np.array([2**64 - 1, 2**64 - 1], np.uint64))
    assert s.max == 2**64 - 1 and s.mean == float(2**64 - 1)
    s = dump.tensor_stats(np.array([-128, 127, 0], np.int8))
    assert (s.element_type, s.min, s.max, s.mean, s.zeros, s.nan) == ("i8", -128, 127, -1 / 3, 1, 0)
    assert s.std == pytest.approx(np.std([-128.0, 127.0, 0.0]), rel=1e-15)


def test_booleans_and_strings_are_counted_only():
    s = dump.tensor_stats(np.array([[True, False], [True, True]]))
    assert (s.element_type, s.true, s.zeros, s.min, s.mean, s.nan) == ("boolean", 3, 1, None, None, None)
    s = dump.tensor_stats(np.array(["a", "bc", ""]))
    assert (s.element_type, s.size, s.min, s.zeros, s.nan) == ("string", 3, None, None, None)


def test_run_stats_keep_the_order_and_keys_of_the_dump():
    compiled, feeds = _bundled("small_cnn")
    stats, outputs = dump.run_stats(compiled, feeds, dump.select(compiled, types="Relu,Softmax"))
    dumped = dump.dump_tensors(compiled.new_request(), feeds, dump.select(compiled, types="Relu,Softmax")).tensors
    assert list(stats) == list(dumped)
    assert all(stats[key] == dump.tensor_stats(value) for key, value in dumped.items())
    assert stats["Relu_8:1"].min == 0.0 and stats["Relu_8:1"].zeros > 0
    records = dump.stats_json(stats)
    assert [r["tensor"] for r in records] == list(stats) and records[0]["shape"] == [1, 16, 32, 32]
    table = dump.stats_table(stats).splitlines()
    assert table[0].split() == list(dump.STATS_HEADER) and len(table) == len(stats) + 1
    assert len({line.index(" f32 ") for line in table[1:]}) == 1  # aligned


# --- NaN and infinity ---------------------------------------------------------------------------


def test_the_first_layer_that_overflows_is_found_and_its_readers_are_not_blamed(overflow):
    compiled = irscatter.read_model(overflow).compile()
    (found,) = dump.find_nonfinite(compiled, {"x": FINITE_X})
    assert (found.origin, found.layer.name, found.layer.type, found.layer.version) == ("layer", "exp", "Exp", "1")
    assert (found.tensor, found.port, found.pos_inf, found.nan, found.neg_inf) == ("exp:1", 1, 2, 0, 0)
    assert (found.first_index, found.first_value, found.size, found.line) == ((2,), "+inf", 4, 5)
    ((port_id, source, stats),) = found.inputs
    assert (port_id, source, stats.max, stats.nonfinite) == (0, "x:0", 1000.0, 0)
    assert "exp" in found.describe() and "line 5" in found.describe()


def test_every_layer_that_makes_nan_or_inf_from_finite_inputs(overflow):
    compiled = irscatter.read_model(overflow).compile()
    found = dump.find_nonfinite(compiled, {"x": FINITE_X}, first_only=False)
    assert [(f.origin, f.layer.name) for f in found] == [("layer", "exp"), ("layer", "log")]
    log = found[1]
    assert (log.nan, log.first_index, log.first_value, log.inputs[0][1]) == (1, (0,), "nan", "negative:0")
    record = json.loads(json.dumps(log.to_json()))
    assert record["layer"] == {"id": 5, "name": "log", "type": "Log", "version": "1"} and record["inputs"][0]["min"] == -1.0


def test_nan_fed_as_an_input_is_reported_as_such(overflow):
    compiled = irscatter.read_model(overflow).compile()
    found = dump.find_nonfinite(compiled, {"x": np.array([0, np.nan, 1, 2], np.float32)}, first_only=False)
    assert [(f.origin, f.layer.name) for f in found] == [("input", "x"), ("layer", "log")]
    assert (found[0].nan, found[0].first_index) == (1, (1,))
    assert "came in through the inputs" in found[0].describe()


def test_a_finite_model_has_nothing_to_report():
    compiled, feeds = _bundled("transformer_block")
    assert dump.find_nonfinite(compiled, feeds, first_only=False) == []
    assert dump.nonfinite_summary([]) == "no layer makes NaN or Inf from finite inputs"


def test_a_body_layer_is_blamed_and_not_the_layer_that_owns_the_body():
    """The body multiplies each slice of x by the iteration number: 3e38 * 2 overflows in
    iteration 2 (and again in 3); the Add that reads it and the Loop itself are not blamed."""
    compiled, feeds = _control("loop_scan")
    feeds = {**feeds, "x": np.full_like(feeds["x"], 3e38)}
    found = dump.find_nonfinite(compiled, feeds, first_only=False)
    assert [f.tensor for f in found] == ["Loop_16/body[2]/Multiply_5:2", "Loop_16/body[3]/Multiply_5:2"]
    assert [source for _, source, _ in found[0].inputs] == ["Loop_16/body[2]/xi:0", "Loop_16/body[2]/Convert_4:1"]
    (first,) = dump.find_nonfinite(compiled, feeds)
    assert first == found[0]


# --- the command line ---------------------------------------------------------------------------


def _model(name: str) -> list[str]:
    return [str(MODELS / name / "model.xml"), "--inputs", str(MODELS / name / "inputs.npz")]


def test_cli_dump_saves_every_tensor_and_the_outputs(tmp_path):
    proc = cli("run", *_model("small_cnn"), "--dump", str(tmp_path / "all"))
    assert proc.returncode == 0, proc.stderr
    compiled, feeds = _bundled("small_cnn")
    recorded = _recorded(compiled, feeds)
    saved = np.load(tmp_path / "all.npz")
    outputs = {spec.name for spec in compiled.outputs}
    assert set(saved.files) == set(recorded) | outputs
    np.testing.assert_array_equal(saved["Relu_8:1"], recorded["Relu_8:1"])
    assert f"wrote {len(recorded)} tensors and 2 outputs to {tmp_path / 'all.npz'}" in proc.stdout
    assert "probs: float32 [1, 10]" in proc.stdout  # the outputs are printed as usual


def test_cli_dump_with_filters(tmp_path):
    out = tmp_path / "some.npz"
    proc = cli("run", *_model("small_cnn"), "--dump", str(out), "--types", "Convolution-1", "--layers", "_25$")
    assert proc.returncode == 0, proc.stderr
    assert np.load(out).files == ["Convolution_25:2", "probs", "logits"]


def test_cli_dump_of_body_values(tmp_path):
    out = tmp_path / "body.npz"
    proc = cli("run", str(CONTROL / "loop_scan.xml"), "--inputs", str(CONTROL / "loop_scan.npz"),
               "--dump", str(out), "--layers", r"body\[1\]/Add")
    assert proc.returncode == 0, proc.stderr
    assert [k for k in np.load(out).files if "/" in k] == ["Loop_16/body[1]/Add_6:2"]


def test_cli_stats_table_and_json():
    proc = cli("run", *_model("small_cnn"), "--stats", "--types", "Relu")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == list(dump.STATS_HEADER)
    assert [line.split()[0] for line in lines[1:]] == ["Relu_8:1", "Relu_22:1", "Relu_29:1"]
    assert "Softmax" not in proc.stdout  # the statistics replace the outputs
    proc = cli("run", *_model("small_cnn"), "--stats", "--json", "--layers", "^x$")
    assert proc.returncode == 0, proc.stderr
    (record,) = json.loads(proc.stdout)
    assert record["tensor"] == "x:0" and record["element_type"] == "f32" and record["nan"] == 0


def test_cli_stats_of_a_dump_are_those_of_the_dumped_tensors(tmp_path):
    proc = cli("run", *_model("small_cnn"), "--dump", str(tmp_path / "d.npz"), "--stats", "--json",
               "--types", "Softmax")
    assert proc.returncode == 0, proc.stderr
    (record,) = json.loads(proc.stdout)
    assert record["tensor"] == "Softmax_40:1" and record["min"] > 0
    assert "wrote 1 tensor" in proc.stderr  # stdout stays one JSON document


def test_cli_check_numerics(overflow):
    feeds = overflow.parent / "x.npy"
    np.save(feeds, FINITE_X)
    proc = cli("run", str(overflow), "-i", f"x={feeds}", "--check-numerics")
    assert proc.returncode == 1, proc.stderr
    assert 'layer 1 "exp" (Exp-1) (line 5) output port 1 (tensor "exp:1"): 2 +Inf of 4 values, first at [2]' in proc.stdout
    assert "input port 0 (x:0)" in proc.stdout and '"log"' not in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == 'first NaN/Inf made by layer 1 "exp" (Exp-1) (line 5)'

    proc = cli("run", str(overflow), "-i", f"x={feeds}", "--check-numerics", "--all", "--json")
    assert proc.returncode == 1, proc.stderr
    assert [(r["origin"], r["layer"]["name"]) for r in json.loads(proc.stdout)] == [("layer", "exp"), ("layer", "log")]


def test_cli_check_numerics_on_a_finite_model_and_on_nan_inputs(tmp_path, overflow):
    proc = cli("run", *_model("small_cnn"), "--check-numerics")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "no layer makes NaN or Inf from finite inputs"

    feeds = tmp_path / "nan.npy"
    np.save(feeds, np.array([np.nan, 0, 0, 0], np.float32))
    proc = cli("run", str(overflow), "-i", f"x={feeds}", "--check-numerics", "--json")
    found = json.loads(proc.stdout)
    assert found[0]["origin"] == "input" and found[0]["layer"]["name"] == "x" and found[0]["nan"] == 1
    assert found[1]["layer"]["name"] == "log" and proc.returncode == 1


def test_cli_stats_and_numerics_together_print_one_json_object():
    proc = cli("run", *_model("small_cnn"), "--stats", "--check-numerics", "--json", "--types", "Softmax")
    assert proc.returncode == 0, proc.stderr
    both = json.loads(proc.stdout)
    assert set(both) == {"stats", "nonfinite"} and both["nonfinite"] == []


@pytest.mark.parametrize("flags, message", [
    (["--layers", "conv"], "--layers only applies with --dump or --stats"),
    (["--types", "Convolution"], "--types only applies with --dump or --stats"),
    (["--all"], "--all only applies with --check-numerics"),
    (["--stats", "--layers", "("], 'the layer pattern "(" is not a regular expression'),
    (["--stats", "--types", "Conv"], 'no layer of the model is of type "Conv"'),
    (["--stats", "--profile"], "--profile times a run; it does not combine with"),
    (["--stats", "--steps", "2"], "they do not combine with --steps"),
    (["--dump", "/no/such/folder/x.npz"], "--dump /no/such/folder/x.npz: the folder /no/such/folder does not exist"),
])
def test_cli_usage_errors(flags, message):
    proc = cli("run", *_model("small_cnn"), *flags)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("irscatter: error: ") and message in proc.stderr, proc.stderr


def test_cli_a_selection_of_nothing_is_a_note(tmp_path):
    out = tmp_path / "none.npz"
    proc = cli("run", *_model("small_cnn"), "--dump", str(out), "--layers", "no such layer")
    assert proc.returncode == 0, proc.stderr
    assert "irscatter: note: --layers/--types select no tensor of this run" in proc.stderr
    assert np.load(out).files == ["probs", "logits"]
