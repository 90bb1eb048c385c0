"""`irscatter extract` and `irscatter reduce`: standalone cuts of a model that OpenVINO reads and
agrees with, and failing models shrunk to a reproducer (OpenVINO always in a worker process)."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from chains import chain
from helpers import cli

import irscatter
from irscatter.debug import compare, extract, reduce
from irscatter.debug.tolerances import Tolerances
from irscatter.metrics import diff
from irscatter.targets.openvino import OpenVINOTarget

MODELS = Path(__file__).resolve().parent.parent / "models"
DATA = Path(__file__).resolve().parent / "data"
needs_openvino = pytest.mark.skipif(importlib.util.find_spec("openvino") is None,
                                    reason="openvino is not installed, so the differential tests against it did not run")

CUTS = [  # model, outputs, inputs
    ("small_cnn", ["Relu_22:1"], ["MaxPool_9:1"]),
    ("small_cnn", ["probs"], []),
    ("small_cnn", ["MaxPool_9:1", "MaxPool_9:2", "Add_28:2"], ["Relu_8:1"]),
    ("transformer_block", ["MatMul_37:2"], []),
    ("lstm_sequence", [], []),  # every output, from the model's own inputs
    ("relative_position_bias", ["probs"], ["Divide_12:2"]),
    ("paged_kv_cache", ["written"], ["slot_mapping"]),
]


@pytest.fixture(scope="module")
def target():
    t = OpenVINOTarget("CPU", "f32")
    yield t
    t.close()


def _cut(model: str, outputs: list[str], inputs: list[str], folder: Path):
    compiled = irscatter.read_model(MODELS / model / "model.xml").compile()
    feeds = dict(np.load(MODELS / model / "inputs.npz"))
    values = compare.reference_values(compiled, feeds)
    outs = extract.resolve(compiled, outputs, "--outputs") if outputs else tuple(
        compiled.graph.sources[s.layer.id][0] for s in compiled.outputs)
    cut = extract.plan(compiled, outs, extract.resolve(compiled, inputs, "--from"))
    return compiled, values, cut, extract.write(compiled, cut, folder / "sub.xml", values)


@pytest.mark.parametrize("model, outputs, inputs", CUTS)
def test_a_cut_computes_the_original_tensors_in_irscatter(tmp_path, model, outputs, inputs):
    compiled, values, cut, written = _cut(model, outputs, inputs, tmp_path)
    got = irscatter.read_model(written.xml).run(dict(np.load(tmp_path / "inputs.npz")))
    expected = np.load(tmp_path / "expected.npz")
    assert set(got) == set(expected.files) == set(written.output_names.values())
    for src, name in written.output_names.items():
        assert np.array_equal(got[name], values[src]) and np.array_equal(expected[name], values[src])
    assert set(np.load(tmp_path / "inputs.npz").files) == set(written.input_names.values())


@needs_openvino
@pytest.mark.parametrize("model, outputs, inputs", CUTS)
def test_a_cut_loads_in_openvino_and_matches_the_original_tensors(tmp_path, target, model, outputs, inputs):
    compiled, values, cut, written = _cut(model, outputs, inputs, tmp_path)
    feeds = dict(np.load(tmp_path / "inputs.npz"))
    got = target.infer(written.xml, feeds)
    names = target.output_names(written.xml)
    by_name = {n: array for theirs, array in zip(names, got) for n in theirs}
    tolerances = Tolerances()
    for src, name in written.output_names.items():
        key = extract.tensor_key(compiled, src)
        verdict = diff(by_name[name], values[src], tolerances.for_tensor(key, values[src].dtype))
        if model == "relative_position_bias" and name == "probs":
            assert verdict.passed  # fed the spec's Divide output, the rest of the model agrees
        elif model != "relative_position_bias":
            assert verdict.passed, (name, verdict.summary())


@needs_openvino
@pytest.mark.parametrize("output, paired", [
    ("Concat_11461:2", True),  # the Assign writes this very tensor: it comes along with its ReadValue
    ("ReadValue_11448:1", False),  # its Assign writes a tensor the cut does not compute: it is fed
])
def test_a_read_value_keeps_its_assign_or_is_fed_and_openvino_runs_the_cut(tmp_path, target, output, paired):
    """OpenVINO's CPU plugin runs no ReadValue without its Assign."""
    compiled = irscatter.read_model(MODELS / "stateful_decoder" / "model.xml").compile()
    steps = dict(np.load(MODELS / "stateful_decoder" / "inputs.npz"))
    values = compare.reference_values(compiled, {"x": steps["step0/x"]})
    cut = extract.plan(compiled, extract.resolve(compiled, [output], "--outputs"))
    kinds = [compiled.graph.layers[lid].type for lid in cut.layers]
    assert ("ReadValue" in kinds, "Assign" in kinds) == (paired, paired)
    written = extract.write(compiled, cut, tmp_path / "sub.xml", values)
    [(src, name)] = written.output_names.items()
    got = target.infer(written.xml, dict(np.load(tmp_path / "inputs.npz")))
    assert diff(got[0], values[src], Tolerances().for_tensor(name, values[src].dtype)).passed


def test_a_whole_model_cut_keeps_its_state_and_steps_as_the_model_does(tmp_path):
    """The Assigns are sinks no output needs; the cut keeps them when it computes what they
    write, so the written model carries its variables from run to run as the original does."""
    compiled = irscatter.read_model(MODELS / "stateful_decoder" / "model.xml").compile()
    outputs = tuple(compiled.graph.sources[s.layer.id][0] for s in compiled.outputs)
    cut = extract.plan(compiled, outputs)
    state = ("ReadValue", "Assign")
    kinds = sorted(compiled.graph.layers[lid].type for lid in cut.layers if compiled.graph.layers[lid].type in state)
    assert kinds == sorted(layer.type for layer in compiled.model.layers if layer.type in state)
    assert not cut.inputs or all(compiled.graph.layers[src[0]].type == "Parameter" for src in cut.inputs)
    written = extract.write(compiled, cut, tmp_path / "whole.xml")
    again = irscatter.compile_model(written.xml)
    steps = dict(np.load(MODELS / "stateful_decoder" / "inputs.npz"))
    for k in range(4):
        feeds = {"x": steps[f"step{k}/x"]}
        want, got = compiled.run(feeds), again.run(feeds)
        assert [np.array_equal(got[name], want[name]) for name in want] == [True] * len(want), k


RT_INFO_MODEL = """<?xml version="1.0"?>
<net name="annotated" version="11">
  <layers>
    <layer id="0" name="x" type="Parameter" version="opset1">
      <data shape="1,3" element_type="f32"/>
      <output><port id="0" precision="FP32" names="x"><dim>1</dim><dim>3</dim>
        <rt_info><attribute name="layout" version="0" layout="[N,C]"/></rt_info></port></output>
    </layer>
    <layer id="1" name="relu" type="ReLU" version="opset1">
      <rt_info><attribute name="fused_names" version="0" value="relu,act"/></rt_info>
      <input><port id="0" precision="FP32"><dim>1</dim><dim>3</dim></port></input>
      <output><port id="1" precision="FP32" names="y"><dim>1</dim><dim>3</dim></port></output>
    </layer>
    <layer id="2" name="out" type="Result" version="opset1">
      <input><port id="0" precision="FP32"><dim>1</dim><dim>3</dim></port></input>
    </layer>
  </layers>
  <edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
         <edge from-layer="1" from-port="1" to-layer="2" to-port="0"/></edges>
  <rt_info>
    <info name="OpenVINO Runtime" value="2026.4"/>
    <framework><version value="2026.4"/></framework>
    <runtime_options><KV_CACHE_PRECISION value="u8"/></runtime_options>
  </rt_info>
</net>
"""


def test_a_written_cut_keeps_the_rt_info_of_the_model_its_layers_and_ports(tmp_path):
    """Runtime options (applied when a model is compiled), a Parameter's layout and a layer's
    fused names survive the writer: a reproducer must compile as the original does."""
    (tmp_path / "model.xml").write_text(RT_INFO_MODEL)
    (tmp_path / "model.bin").write_bytes(b"")
    compiled = irscatter.read_model(tmp_path / "model.xml").compile()
    cut = extract.plan(compiled, extract.resolve(compiled, ["y"], "--outputs"))
    again = irscatter.read_model(extract.write(compiled, cut, tmp_path / "cut" / "sub.xml").xml)
    assert again.rt_info == compiled.model.rt_info == {"OpenVINO Runtime": "2026.4", "framework": {"version": "2026.4"},
                                                       "runtime_options": {"KV_CACHE_PRECISION": "u8"}}
    by_name = {layer.name: layer for layer in again.layers}
    assert by_name["x"].outputs[0].rt_info == {"layout": {"version": "0", "layout": "[N,C]"}}
    assert by_name["relu"].rt_info == {"fused_names": {"version": "0", "value": "relu,act"}}


def test_around_takes_a_neighbourhood_and_its_boundary(tmp_path):
    compiled = irscatter.read_model(MODELS / "small_cnn" / "model.xml").compile()
    cut = extract.around(compiled, "BatchNormInference_21", 1)
    names = [compiled.graph.layers[lid].name for lid in cut.layers if compiled.graph.layers[lid].type not in ("Const",)]
    assert names == ["GroupConvolution_12", "BatchNormInference_21", "Relu_22"]
    assert [extract.tensor_key(compiled, s) for s in cut.inputs] == ["MaxPool_9:1"]
    assert [extract.tensor_key(compiled, s) for s in cut.outputs] == ["Relu_22:1"]
    assert extract.around(compiled, "BatchNormInference_21", 0).size < cut.size


def test_cli_extract_with_values_from_a_dump(tmp_path):
    model = MODELS / "small_cnn" / "model.xml"
    dumped = cli("run", str(model), "--inputs", str(MODELS / "small_cnn" / "inputs.npz"), "--dump",
                 str(tmp_path / "dump.npz"))
    assert dumped.returncode == 0, dumped.stderr
    out = cli("extract", str(model), "--outputs", "Add_28:2", "--from", "Relu_22:1", "-o", str(tmp_path / "sub"),
              "--values", str(tmp_path / "dump.npz"))
    assert out.returncode == 0, out.stderr
    assert "wrote" in out.stderr and "Convolution_25, Add_28" in out.stderr
    check = cli("run", str(tmp_path / "sub.xml"), "--inputs", str(tmp_path / "inputs.npz"), "--expected",
                str(tmp_path / "expected.npz"))
    assert check.returncode == 0 and "ok   Add_28:2" in check.stdout


def test_cli_extract_makes_the_folder_it_writes_into_as_the_readme_shows(tmp_path):
    model = MODELS / "small_cnn"
    out = cli("extract", str(model / "model.xml"), "--outputs", "Relu_22:1", "--from", "MaxPool_9:1", "-o",
              str(tmp_path / "cut" / "sub.xml"), "--inputs", str(model / "inputs.npz"))
    assert out.returncode == 0, out.stderr
    assert {p.name for p in (tmp_path / "cut").iterdir()} == {"sub.xml", "sub.bin", "inputs.npz", "expected.npz"}


@pytest.mark.parametrize("args, message", [
    (["--outputs", "nope:1"], 'no tensor named "nope:1"'),
    (["--outputs", "Relu_22:1", "--from", "Softmax_40:1"], "do not depend on Softmax_40:1"),
    ([], "--outputs NAME[,NAME...] or --around LAYER"),
    (["--outputs", "Relu_22:1", "--around", "Relu_22"], "one of the two"),
    (["--around", "nobody"], 'no layer named "nobody"'),
    (["--outputs", "probs", "--values", "x.npz", "--random"], "--values gives every tensor's value"),
    (["--outputs", "Relu_22:1", "--inputs", "MaxPool_9:1"], "the tensors the cut is fed instead of computing go in --from"),
])
def test_cli_extract_usage_errors(tmp_path, args, message):
    out = cli("extract", str(MODELS / "small_cnn" / "model.xml"), *args, "-o", str(tmp_path / "sub.xml"))
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("model, args", [
    ("small_cnn", ["--outputs", "fc.bias:0"]),  # a Const's tensor: the cut computes nothing
    ("stablehlo_scatter", ["--around", "scatter_indices", "--hops", "0"]),  # a Parameter's
])
def test_a_cut_of_tensors_no_layer_computes_checks_out_against_its_own_expected_values(tmp_path, model, args):
    """expected.npz is keyed as the written model names its outputs, whatever tensor they are."""
    xml = tmp_path / "sub.xml"
    made = cli("extract", str(MODELS / model / "model.xml"), *args, "-o", str(xml), "--inputs",
               str(MODELS / model / "inputs.npz"))
    assert made.returncode == 0, made.stderr
    assert "(no layer computes anything: each output is an input or a constant)" in made.stderr
    checked = cli("run", str(xml), "--inputs", str(xml.parent / "inputs.npz"), "--expected",
                  str(xml.parent / "expected.npz"))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_cut_holding_an_assign_without_its_read_value_is_refused(tmp_path):
    out = cli("extract", str(DATA / "control" / "state_counter.xml"), "--around", "Assign_306", "--hops", "0",
              "-o", str(tmp_path / "sub.xml"), "--random")
    assert out.returncode == 2 and "not the ReadValue" in out.stderr and "Traceback" not in out.stderr


# --- reduce --------------------------------------------------------------------------------------


@needs_openvino
def test_reduce_shrinks_a_planted_divergence_to_its_layer_and_the_readme_reproduces_it(tmp_path, target):
    xml, feeds, name = chain(tmp_path, 700, 300)
    compiled = irscatter.read_model(xml).compile()
    values = compare.reference_values(compiled, feeds)
    check = reduce.TargetCheck(compiled, target, Tolerances())
    reduction = reduce.reduce_model(compiled, values, check)
    assert reduction.reproducible and reduction.deterministic
    kept = [compiled.graph.layers[lid].name for lid in reduction.cut.layers if compiled.graph.layers[lid].type != "Const"]
    assert kept == [name]
    out = tmp_path / "repro"
    reduce.write_reproducer(compiled, values, reduction, check, out, "irscatter reduce chain.xml")
    assert {p.name for p in out.iterdir()} == {"model.xml", "model.bin", "inputs.npz", "expected.npz",
                                               "actual.npz", "README.md"}
    readme = (out / "README.md").read_text()
    assert f'to 1 layer: "{name}" (Divide-1)' in readme
    command = next(line.strip() for line in readme.splitlines() if line.strip().startswith("irscatter compare"))
    again = subprocess.run(shlex.split(command), cwd=out, capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and name in again.stdout
    one_liner = next(line.strip() for line in readme.splitlines() if line.strip().startswith("python -c"))
    ov_only = subprocess.run(one_liner, shell=True, cwd=out, capture_output=True, text=True, timeout=120)
    assert ov_only.returncode == 0 and float(ov_only.stdout.split()[-1]) == 1.0  # floor against truncation
    assert not np.array_equal(np.load(out / "actual.npz")[f"{name}:2"], np.load(out / "expected.npz")[f"{name}:2"])


@needs_openvino
def test_cli_reduce_a_clean_model_is_not_reproducible(tmp_path):
    out = cli("reduce", str(MODELS / "small_cnn" / "model.xml"), "--random", "-o", str(tmp_path / "r"))
    assert out.returncode == 1 and "not reproducible" in out.stdout
    assert not (tmp_path / "r").exists()


@needs_openvino
def test_cli_reduce_writes_the_reproducer(tmp_path):
    folder = MODELS / "relative_position_bias"
    out = cli("reduce", str(folder / "model.xml"), "--inputs", str(folder / "inputs.npz"), "-o", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr
    assert "reduced to 1 layer (Divide_12)" in out.stdout
    assert "Divide_12:2: 54 of 144 elements differ" in (tmp_path / "r" / "README.md").read_text()


def test_reduce_with_a_command_and_a_pattern(tmp_path):
    model = MODELS / "relative_position_bias" / "model.xml"
    out = cli("reduce", str(model), "--inputs", str(MODELS / "relative_position_bias" / "inputs.npz"),
              "-o", str(tmp_path / "r"), "--check", "cat {model}", "--fail-regex", 'type="Gather"')
    assert out.returncode == 0, out.stderr
    assert "reduced to 1 layer (Gather_" in out.stdout
    readme = (tmp_path / "r" / "README.md").read_text()
    assert "cat model.xml" in readme and not (tmp_path / "r" / "actual.npz").exists()
    assert "--check 'cat {model}' --fail-regex 'type=\"Gather\"'" in readme  # the command as it can be pasted


def test_reduce_says_when_the_check_is_not_deterministic(tmp_path):
    counter = tmp_path / "calls"
    check = reduce.CommandCheck(f"{shlex.quote(sys.executable)} {shlex.quote(str(DATA / 'flaky_check.py'))} "
                                f"{{model}} {shlex.quote(str(counter))}")
    compiled = irscatter.read_model(MODELS / "relative_position_bias" / "model.xml").compile()
    values = compare.reference_values(compiled, dict(np.load(MODELS / "relative_position_bias" / "inputs.npz")))
    reduction = reduce.reduce_model(compiled, values, check)
    assert reduction.reproducible and not reduction.deterministic
    assert "not deterministic" in reduction.note
    again = tmp_path / "calls-again"
    out = cli("reduce", str(MODELS / "relative_position_bias" / "model.xml"), "--inputs",
              str(MODELS / "relative_position_bias" / "inputs.npz"), "-o", str(tmp_path / "r"), "--check",
              f"{shlex.quote(sys.executable)} {shlex.quote(str(DATA / 'flaky_check.py'))} {{model}} "
              f"{shlex.quote(str(again))}")
    assert out.returncode == 1 and "note: the check is not deterministic" in out.stdout, out.stdout + out.stderr
    assert (tmp_path / "r" / "model.xml").exists()  # written all the same, with the note


@pytest.mark.parametrize("args, message", [
    (["--check", "true", "--target", "openvino"], "--check decides by its command"),
    (["--fail-regex", "x"], "--fail-regex only applies with --check"),
    (["--check", "true"], "must name the candidate model as {model}"),
    (["--check", "cat {model}", "--fail-regex", "("], "--fail-regex ("),
])
def test_cli_reduce_usage_errors(tmp_path, args, message):
    out = cli("reduce", str(MODELS / "small_cnn" / "model.xml"), "--random", "-o", str(tmp_path / "r"), *args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_cli_reduce_refuses_a_folder_with_files(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "keep.txt").write_text("mine")
    out = cli("reduce", str(MODELS / "small_cnn" / "model.xml"), "--random", "-o", str(tmp_path / "r"))
    assert out.returncode == 2 and "new or empty folder" in out.stderr


@pytest.mark.parametrize("values", [[], ["--inputs", str(MODELS / "dynamic_batch" / "inputs.npz")]])
def test_a_cut_keeps_the_inputs_partial_shapes_and_bounds(tmp_path, values):
    """With values too: a failure only the dynamic shape brings out must reproduce in the cut."""
    xml = tmp_path / "sub.xml"
    made = cli("extract", str(MODELS / "dynamic_batch" / "model.xml"), "--outputs", "y", "-o", str(xml), *values)
    assert made.returncode == 0, made.stderr
    original = irscatter.compile_model(MODELS / "dynamic_batch" / "model.xml")
    cut = irscatter.compile_model(xml)
    assert [(s.name, str(s.shape)) for s in cut.inputs] == [(s.name, str(s.shape)) for s in original.inputs]
    if values:  # the fed values, of one concrete shape, beside it; they run it and match
        feeds = dict(np.load(tmp_path / "inputs.npz"))
        expected = dict(np.load(tmp_path / "expected.npz"))
        got = cut.run(feeds)
        assert all(np.array_equal(got[k], expected[k]) for k in expected)
