"""`irscatter compare`: tensor metrics, tolerances, the IR writer it builds target models with,
and the comparison itself against OpenVINO's CPU plugin (always in a worker process)."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from chains import chain
from helpers import cli, cpu_note

import irscatter
from irscatter.debug import compare
from irscatter.debug.tolerances import Tolerances, at_device_precision, emulated_at_device_precision, parse_override
from irscatter.debug.verdicts import summary_line, table
from irscatter.ir.writer import IRWriter
from irscatter.metrics import PRESETS, Tolerance, diff, preset_for
from irscatter.runtime.steps import split_steps
from irscatter.targets.openvino import OpenVINOTarget
from irscatter.targets.worker import TargetFailure, WorkerProcess

MODELS = Path(__file__).resolve().parent.parent / "models"
DATA = Path(__file__).resolve().parent / "data"
needs_openvino = pytest.mark.skipif(importlib.util.find_spec("openvino") is None,
                                    reason="openvino is not installed, so the differential tests against it did not run")


# --- metrics -------------------------------------------------------------------------------------


def test_exact_types_compare_exactly_and_name_the_first_difference():
    want = np.array([[1, 2], [3, 4]], np.int32)
    assert diff(want.copy(), want, PRESETS["f32"]).passed
    got = want.copy()
    got[1, 0] = 5
    d = diff(got, want, PRESETS["f32"])  # a tolerance given for an integer tensor is not used
    assert not d.passed and d.tolerance is None
    assert (d.mismatches, d.worst, int(d.worst_target), int(d.worst_reference)) == (1, (1, 0), 5, 3)
    assert "1 of 4 elements differ; first at [1, 0]: 5 vs 3" == d.summary()
    named = diff(got, want, None, sides=("openvino:CPU", "irscatter"))  # as a report names its sides
    assert named.summary() == "1 of 4 elements differ; first at [1, 0]: irscatter 3, openvino:CPU 5"


def test_the_tolerance_rule_scales_atol_with_the_largest_magnitude():
    want = np.array([1000.0, 0.0, 1.0], np.float32)
    tol = Tolerance(rtol=0.0, atol=1e-3)
    # 1e-3 of the largest magnitude (1000) is 1: an error of 0.9 at the zero passes, 1.1 does not
    assert diff(want + np.array([0, 0.9, 0], np.float32), want, tol).passed
    failed = diff(want + np.array([0, 1.1, 0], np.float32), want, tol)
    assert not failed.passed and failed.worst == (1,) and failed.mismatches == 1
    # the smallest tolerances that would pass, each at the other as given
    assert failed.required.atol == pytest.approx(1.1e-3, rel=1e-6)
    assert math.isinf(failed.required.rtol)  # no rtol passes an error at a zero reference
    assert diff(want + np.array([0, 1.1, 0], np.float32), want, Tolerance(0.0, failed.required.atol * 1.0001)).passed


@pytest.mark.parametrize("mask", [-1e30, float(np.finfo(np.float32).min)])
def test_a_mask_value_does_not_set_the_scale_of_the_absolute_tolerance(mask):
    """An attention mask's -1e30 is a million times the tensor's median magnitude and more: it
    leaves the scale to the other values, which would otherwise pass with any error at all."""
    want = np.array([5.0, 9.0, -7.0, mask], np.float32)
    wrong = np.array([0.3, -1.2, 0.7, mask], np.float32)
    failed = diff(wrong, want, PRESETS["f32"])
    assert not failed.passed and failed.mismatches == 3
    assert diff(want + np.array([1e-5, 0, 0, 0], np.float32), want, PRESETS["f32"]).passed
    rounded = diff(np.array([1.0, 0.0, mask], np.float32), np.array([0.0, 0.0, mask], np.float32), PRESETS["f32"])
    assert not rounded.passed  # Round(0.49999997) as 1 where the spec gives 0


def test_float_metrics_on_known_values():
    want = np.array([3.0, 4.0, 0.0, -1.0], np.float32)
    got = np.array([3.0, 4.5, 0.0, -1.0], np.float32)
    d = diff(got, want, Tolerance(1e-3, 1e-3))
    assert not d.passed
    assert d.max_abs == pytest.approx(0.5) and d.max_rel == pytest.approx(0.125)
    assert d.mean_abs == pytest.approx(0.125)
    g, w = got.astype(np.float64), want.astype(np.float64)  # computed in f64
    assert d.cosine == pytest.approx(float(g @ w) / (np.linalg.norm(g) * np.linalg.norm(w)), rel=1e-12)
    assert d.nrmse == pytest.approx(math.sqrt(0.25 / 4) / math.sqrt(26 / 4))
    assert d.max_ulps == float(np.float32(4.5).view(np.int32) - np.float32(4.0).view(np.int32))


def test_nan_and_infinity_on_one_side_always_fail():
    want = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    assert diff(want.copy(), want, Tolerance(0, 0)).passed  # NaN equals NaN, inf equals inf
    got = np.array([np.nan, np.inf, np.inf, np.nan], np.float32)
    d = diff(got, want, Tolerance(1e9, 1e9))
    assert not d.passed and d.mismatches == 2
    assert "2 NaN or infinite on one side only, first at [2]" in d.nonfinite
    assert d.max_abs == math.inf and d.max_rel == math.inf  # (not the 0 the finite elements give)


@pytest.mark.parametrize("got, problem, named", [
    (np.zeros((2, 3), np.float32), "shape [2, 3], irscatter's is [3, 2]", "shape [3, 2] in a.npz, [2, 3] in b.npz"),
    (np.zeros((3, 2), np.float64), "element type float64, irscatter's is float32",
     "element type float32 in a.npz, float64 in b.npz"),
])
def test_shape_and_type_mismatches_are_the_whole_verdict(got, problem, named):
    d = diff(got, np.zeros((3, 2), np.float32), PRESETS["f32"])
    assert not d.passed and d.summary() == problem
    assert diff(got, np.zeros((3, 2), np.float32), PRESETS["f32"], sides=("b.npz", "a.npz")).summary() == named


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1,), (2, 3, 1, 2, 2)])
def test_every_rank_and_empty_tensors(shape):
    want = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    d = diff(want.copy(), want, PRESETS["f32"])
    assert d.passed and d.count == want.size and d.max_abs == 0.0
    json.dumps(d.to_json())  # always JSON-serialisable


class _RunsOtherwise:
    """A target asked for one precision that runs another, as OpenVINO's CPU plugin does where
    the CPU lacks the arithmetic (f16 asked, bf16 or f32 run)."""

    name = "otherwise"

    def __init__(self, precision: str, ran: str) -> None:
        self.precision, self._ran = precision, ran

    def ran_precision(self) -> str:
        return self._ran


@pytest.mark.parametrize("ran, emulated", [("bf16", "bf16"), ("f32", None), ("f16", "f16")])
def test_tolerances_and_emulation_follow_the_precision_the_target_ran(ran, emulated):
    target = _RunsOtherwise("f16", ran)
    assert at_device_precision(target, Tolerances("f16", rtol=0.5)) == Tolerances(ran, rtol=0.5)
    assert emulated_at_device_precision(target, "f16") == emulated
    assert emulated_at_device_precision(target, None) is None  # nothing emulated unless asked
    assert emulated_at_device_precision(target, "bf16") == "bf16"  # asked for other than the target's
    assert at_device_precision(object(), Tolerances("f16")).precision == "f16"  # cannot say


def test_presets_follow_the_coarser_of_the_target_precision_and_the_tensor_type():
    import ml_dtypes

    assert preset_for(np.dtype(np.int64), "bf16") is None
    assert preset_for(np.dtype(np.bool_)) is None
    assert preset_for(np.dtype(np.float32), "f32") == PRESETS["f32"]
    assert preset_for(np.dtype(np.float32), "f16") == PRESETS["f16"]
    assert preset_for(np.dtype(np.float16), "f32") == PRESETS["f16"]
    assert preset_for(np.dtype(ml_dtypes.bfloat16), "f16") == PRESETS["bf16"]
    assert preset_for(np.dtype(np.float64), "f32") == PRESETS["f32"]


def test_tolerance_overrides_by_pattern_and_their_errors():
    tolerances = Tolerances("f32", rtol=1e-3, overrides=(parse_override("^soft.*:1$=0.5,0.25"),))
    assert tolerances.for_tensor("softmax:1", np.dtype(np.float32)) == Tolerance(0.5, 0.25)
    assert tolerances.for_tensor("matmul:2", np.dtype(np.float32)) == Tolerance(1e-3, PRESETS["f32"].atol)
    assert tolerances.for_tensor("softmax:1", np.dtype(np.int32)) is None
    for bad in ("nopattern", "=1e-3", "x=a", "x=1,2,3", "(=1e-3", "x=-1"):
        with pytest.raises(irscatter.IRError, match="^overrides ") as caught:
            parse_override(bad)
        assert caught.value.argument == "overrides" and caught.value.value == bad


# --- the writer ----------------------------------------------------------------------------------


def _copy_through_writer(xml: Path, folder: Path) -> Path:
    """Every layer of a model copied into a new IR by the writer, with the declared types and
    shapes irscatter infers."""
    compiled = irscatter.read_model(xml).compile()
    writer = IRWriter("copy")
    made = {}
    for layer in compiled.get_ordered_ops():
        sources = [made.get(s) for s in compiled.graph.sources[layer.id]]
        info = lambda src: (compiled.graph.infos[src].etype, compiled.graph.infos[src].shape.to_tuple()  # noqa: E731
                            if compiled.graph.infos[src].shape.is_static else None)
        if layer.type == "Parameter":
            made[(layer.id, 0)] = writer.parameter(layer.name, *info((layer.id, 0)), layer.outputs[0].names)
        elif layer.type == "Const":
            made[(layer.id, 0)] = writer.const(layer.name, layer.const_value, compiled.graph.infos[(layer.id, 0)].etype)
        elif layer.type == "Result":
            writer.result(layer.name, sources[0], *info(compiled.graph.sources[layer.id][0]))
        else:
            outs = writer.copy(layer, sources, [info(s) for s in compiled.graph.sources[layer.id]],
                               [info((layer.id, p)) for p in range(len(layer.outputs))])
            made.update({(layer.id, p): t for p, t in enumerate(outs)})
    return writer.save(folder / "copy.xml")


@pytest.mark.parametrize("model", ["small_cnn", "transformer_block", "lstm_sequence", "quantized_mlp",
                                   "paged_kv_cache", "mixed_types_v10"])
def test_the_writer_copies_a_model_that_computes_the_same(tmp_path, model):
    original = irscatter.read_model(MODELS / model / "model.xml")
    feeds = dict(np.load(MODELS / model / "inputs.npz"))
    copied = irscatter.read_model(_copy_through_writer(MODELS / model / "model.xml", tmp_path))
    want, got = original.run(feeds), copied.run(feeds)
    by_value = {k: v for k, v in got.items()}
    for name, value in want.items():
        assert np.array_equal(by_value[name], value, equal_nan=value.dtype.kind == "f"), name


@pytest.mark.parametrize("model", ["if_loop_inside", "loop_scan", "ti_reverse"])
def test_the_writer_copies_bodies_with_their_constants(tmp_path, model):
    xml = DATA / "control" / f"{model}.xml"
    feeds = dict(np.load(xml.with_suffix(".npz")))
    want = irscatter.read_model(xml).run(feeds)
    got = irscatter.read_model(_copy_through_writer(xml, tmp_path)).run(feeds)
    for name, value in want.items():
        assert np.array_equal(got[name], value), name


# --- comparing with OpenVINO -------------------------------------------------------------------


@pytest.fixture(scope="module")
def target():
    t = OpenVINOTarget("CPU", "f32")
    yield t
    t.close()


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A 700-layer chain whose layer 300 departs on OpenVINO's CPU plugin."""
    xml, feeds, name = chain(tmp_path_factory.mktemp("chain"), 700, 300)
    return irscatter.read_model(xml).compile(), feeds, name


@needs_openvino
def test_layer_by_layer_names_the_planted_layer_and_only_it(target, planted):
    compiled, feeds, name = planted
    report = compare.compare_layers(compiled, feeds, target, Tolerances())
    assert len(report.layers) == 700
    failed = [r for r in report.layers if r.status != "passed"]
    assert [r.name for r in failed] == [name] and report.first_divergence.name == name
    (tensor,) = failed[0].tensors
    assert tensor.diff.tolerance is None and tensor.diff.mismatches > 0  # i32: judged exactly
    # floor (irscatter, the spec) against truncation (the plugin), element by element
    worst = tensor.diff
    assert int(worst.worst_reference) == int(worst.worst_target) - 1
    assert not report.ok and "first divergence: layer" in summary_line(report)


@needs_openvino
def test_a_clean_model_reports_no_divergence_in_either_mode(target, tmp_path):
    xml, feeds, _ = chain(tmp_path, 300, None)
    compiled = irscatter.read_model(xml).compile()
    layers = compare.compare_layers(compiled, feeds, target, Tolerances())
    assert layers.ok and layers.counts() == {"passed": 300}
    whole = compare.compare_whole(compiled, feeds, target, Tolerances(), bisect=True)
    assert whole.ok and whole.bisect is None and whole.counts() == {"passed": 1}


@needs_openvino
def test_whole_model_bisect_finds_the_planted_layer(target, planted):
    compiled, feeds, name = planted
    report = compare.compare_whole(compiled, feeds, target, Tolerances(), bisect=True)
    assert report.counts() == {"failed": 1}
    assert report.bisect is not None and report.bisect.name == name
    assert any(t.key.startswith(name) for t in report.bisect.tensors)
    assert "prefixes run" in report.bisect_note


@needs_openvino
def test_a_target_crash_costs_one_layer(tmp_path):
    xml, feeds, _ = chain(tmp_path, 40, None)
    text = xml.read_text().replace('name="negative_22"', 'name="crash_here_22"')
    xml.write_text(text)
    compiled = irscatter.read_model(xml).compile()
    crashing = OpenVINOTarget("CPU", "f32")
    crashing._process._worker = WorkerProcess([sys.executable, str(DATA / "crashing_openvino.py")],
                                              name="OpenVINO", timeout=60)
    try:
        report = compare.compare_layers(compiled, feeds, crashing, Tolerances())
    finally:
        crashing.close()
    statuses = {r.name: r.status for r in report.layers}
    assert statuses.pop("crash_here_22") == "crashed"
    assert set(statuses.values()) == {"passed"}
    crashed = next(r for r in report.layers if r.status == "crashed")
    assert "killed by SIGKILL" in crashed.reason and report.first_divergence is crashed


@needs_openvino
def test_state_and_irscatter_ops_are_listed_as_not_compared(target):
    compiled = irscatter.read_model(MODELS / "stateful_decoder" / "model.xml").compile()
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 1, 64)).astype(np.float32)}
    report = compare.compare_layers(compiled, feeds, target, Tolerances())
    skipped = {r.op.split("-")[0]: r.reason for r in report.layers if r.status == "not compared"}
    assert set(skipped) == {"ReadValue", "Assign"} and "state" in skipped["ReadValue"]
    assert report.ok
    hlo = irscatter.read_model(MODELS / "stablehlo_scatter" / "model.xml").compile()
    report = compare.compare_layers(hlo, dict(np.load(MODELS / "stablehlo_scatter" / "inputs.npz")), target,
                                    Tolerances())
    assert any("the irscatter opset, which the target does not have" in (r.reason or "") for r in report.layers)


@needs_openvino
def test_reduced_precision_targets_pass_a_real_model_within_their_presets(target):
    """Asked for f16 or bf16, OpenVINO's CPU plugin runs what this CPU has arithmetic for (f32
    without AVX-512, bf16 for f16 on AVX-512 without AVX512-FP16): the comparison follows the
    precision the device ran, says it, and passes within that precision's presets."""
    compiled = irscatter.read_model(MODELS / "transformer_block" / "model.xml").compile()
    feeds = dict(np.load(MODELS / "transformer_block" / "inputs.npz"))
    for precision in ("f16", "bf16"):
        low = OpenVINOTarget("CPU", precision)
        try:
            ran = low.ran_precision()
            report = compare.compare_layers(compiled, feeds, low, Tolerances(precision))
        finally:
            low.close()
        assert f"CPU at {ran}" in report.target and (ran == precision) == ("asked for" not in report.target)
        assert report.ok, table(report)
        worst = max(t.diff.max_abs or 0 for r in report.layers for t in r.tensors)
        strict = Tolerances("f32").for_tensor("x:0", np.dtype(np.float32)).atol
        if ran == "f32":
            cpu_note(f"OpenVINO's CPU plugin runs f32 when asked for {precision} here: checked that compare "
                     "judges it within the f32 presets and says so")
        else:
            if ran != precision:
                cpu_note(f"OpenVINO's CPU plugin runs {ran} when asked for {precision} here")
            assert worst > strict  # the lower precision is really used, and the f32 presets would fail it


# --- the command line ----------------------------------------------------------------------------


@needs_openvino
def test_cli_compare_exit_status_table_and_json(tmp_path):
    xml, feeds, name = chain(tmp_path, 60, 30)
    np.savez(tmp_path / "inputs.npz", **feeds)
    bad = cli("compare", str(xml), "--inputs", str(tmp_path / "inputs.npz"))
    assert bad.returncode == 1, bad.stderr
    assert re.search(rf"^> \s*\d+\s+{name}\s+Divide-1\s+2\s+FAIL", bad.stdout, re.M), bad.stdout
    assert 'first divergence: layer' in bad.stdout and name in bad.stdout.splitlines()[-1]
    as_json = cli("compare", str(xml), "--inputs", str(tmp_path / "inputs.npz"), "--json")
    record = json.loads(as_json.stdout)
    assert record["ok"] is False and record["first_divergence"]["name"] == name
    assert {r["status"] for r in record["records"]} == {"passed", "failed"}
    whole = cli("compare", str(xml), "--inputs", str(tmp_path / "inputs.npz"), "--whole", "--bisect")
    assert whole.returncode == 1 and "first diverging layer (bisect)" in whole.stdout
    good = cli("compare", str(MODELS / "small_cnn" / "model.xml"), "--random", "--all")
    # 15 layers, 16 tensors: MaxPool has two outputs
    assert good.returncode == 0 and good.stdout.count(" ok ") == 16 and "no divergence" in good.stdout


def test_cli_compare_two_dumps(tmp_path):
    a = {"x:0": np.arange(6, dtype=np.float32), "n:1": np.array([1, 2]), "only_a": np.zeros(1)}
    b = {"x:0": np.arange(6, dtype=np.float32) + np.float32(1e-7), "n:1": np.array([1, 3])}
    np.savez(tmp_path / "a.npz", **a)
    np.savez(tmp_path / "b.npz", **b)
    out = cli("compare", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"))
    assert out.returncode == 1
    assert "n:1: 1 of 2 elements differ; first at [1]: b.npz 3, a.npz 2" in out.stdout  # each side named
    assert "1 not compared" in out.stdout and f"only in {tmp_path / 'a.npz'}: only_a" in out.stdout  # named
    assert "a.npz judged against" in out.stdout and "b.npz (reference)" in out.stdout
    listed = cli("compare", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--all")
    assert "only_a" in listed.stdout and "only in" in listed.stdout
    same = cli("compare", str(tmp_path / "a.npz"), str(tmp_path / "a.npz"), "--json")
    assert same.returncode == 0 and json.loads(same.stdout)["ok"] is True and json.loads(same.stdout)["gap"] is None


class _Refusing:
    """A target that refuses every model, as OpenVINO refuses an op it does not know."""

    name = "refusing"

    def infer(self, xml, feeds):
        raise TargetFailure("refused", "no such op here")

    def output_names(self, xml):
        raise TargetFailure("refused", "no such op here")

    def describe(self):
        return "a refusing runtime"

    def close(self):
        return None


class _StateDrift(OpenVINOTarget):
    """OpenVINO, with the outputs of every step from the third on nudged: a runtime whose state
    goes wrong after two steps."""

    def infer_steps(self, xml, steps):
        outputs = super().infer_steps(xml, steps)
        return [[o + np.float32(0.01) if k >= 2 else o for o in step] for k, step in enumerate(outputs)]


@needs_openvino
def test_a_stateful_model_is_compared_step_by_step_and_the_first_wrong_step_is_named():
    compiled = irscatter.compile_model(MODELS / "stateful_decoder" / "model.xml")
    feeds = dict(np.load(MODELS / "stateful_decoder" / "inputs.npz"))
    steps = split_steps(feeds, 1)
    target = _StateDrift("CPU", "f32")
    try:
        drifted = compare.compare_steps(compiled, steps, target, Tolerances("f32"))
    finally:
        target.close()
    assert [r.status for r in drifted.outputs] == ["passed", "passed", "failed", "failed"]
    assert drifted.first_divergence.tensors[0].key == "step2/y"
    assert 'output "step2/y"' in summary_line(drifted) and "--bisect" not in summary_line(drifted)
    out = cli("compare", str(MODELS / "stateful_decoder" / "model.xml"), "--inputs",
              str(MODELS / "stateful_decoder" / "inputs.npz"), "--whole", "--steps", "6")
    assert out.returncode == 0 and "6 passed; no divergence" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("extra", [[], ["--whole", "--bisect"]])
def test_steps_are_compared_as_a_whole_only(extra):
    out = cli("compare", str(MODELS / "stateful_decoder" / "model.xml"), "--inputs",
              str(MODELS / "stateful_decoder" / "inputs.npz"), *extra)
    assert out.returncode == 2 and "compared over steps as a whole" in out.stderr


def test_a_comparison_the_target_refused_entirely_does_not_pass():
    compiled = irscatter.compile_model(MODELS / "small_cnn" / "model.xml")
    feeds = dict(np.load(MODELS / "small_cnn" / "inputs.npz"))
    report = compare.compare_whole(compiled, feeds, _Refusing(), Tolerances("f32"))
    assert report.ok and not report.passed and report.gap == "nothing was compared"
    assert summary_line(report).endswith("no divergence, but nothing was compared")


@pytest.mark.parametrize("judged, gap", [
    ({"conv:0": np.ones(3, np.float32), "x:0": np.zeros(2, np.float32)}, "1 tensor of the reference is not in"),
    ({}, "nothing was compared"),
])
def test_cli_compare_dumps_passes_only_what_it_could_compare(tmp_path, judged, gap):
    """Another runtime names its tensors otherwise (an output index, not a port id): a dump that
    matches only the inputs, or nothing, is no evidence, whatever did not diverge."""
    reference = {"x:0": np.zeros(2, np.float32), "conv:2": np.ones(3, np.float32)}
    np.savez(tmp_path / "judged.npz", **judged)
    np.savez(tmp_path / "reference.npz", **reference)
    out = cli("compare", str(tmp_path / "judged.npz"), str(tmp_path / "reference.npz"))
    assert out.returncode == 1 and "no divergence, but" in out.stdout and gap in out.stdout, out.stdout
    as_json = json.loads(cli("compare", str(tmp_path / "judged.npz"), str(tmp_path / "reference.npz"),
                             "--json").stdout)
    assert as_json["ok"] is True and gap in as_json["gap"]


@pytest.mark.parametrize("args, message", [
    (["--bisect"], "--bisect only applies with --whole"),
    (["--seed", "3"], "--seed only applies with --random"),
    (["--random", "--tol", "oops"], "--tol oops"),
    (["--random", "--target", "tensorrt"], 'the targets are "openvino"'),
    (["--random", "--target", "openvino:NPU.7"], "--target openvino:NPU.7: OpenVINO finds no device NPU.7"),
    (["--random", "--target", "openvino:HETERO:NPU.7,CPU"], "finds no device NPU.7 on this machine (it has CPU"),
])
def test_cli_compare_usage_errors(args, message):
    out = cli("compare", str(MODELS / "small_cnn" / "model.xml"), *args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("command", ["compare", "reduce"])
def test_feeds_that_do_not_fit_the_model_are_a_usage_error_not_a_finding(tmp_path, command):
    """Exit 1 is what compare and reduce found (a divergence, a failure that does not reproduce)."""
    np.savez(tmp_path / "wrong.npz", nope=np.zeros((1, 3, 32, 32), np.float32))
    extra = ["-o", str(tmp_path / "r")] if command == "reduce" else []
    out = cli(command, str(MODELS / "small_cnn" / "model.xml"), "--inputs", str(tmp_path / "wrong.npz"), *extra)
    assert out.returncode == 2 and 'there is no input named "nope"' in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_an_ir_v10_model_is_judged_in_the_types_its_file_declares(tmp_path):
    """OpenVINO reads IR v10 under its legacy conventions: an f16 input taken as f32, i64 outputs
    given as i32 and boolean ones as f32. Neither is a divergence of the model."""
    ov = pytest.importorskip("openvino")
    import openvino.opset15 as ops
    from helpers import save_ov

    a, b = ops.parameter([3], ov.Type.f16, name="a"), ops.parameter([3], ov.Type.i64, name="b")
    total = ops.add(b, b)
    greater = ops.greater(ops.convert(a, "i64"), b)
    scaled = ops.multiply(a, ops.constant(np.float16(2)))
    for node, name in ((total, "total"), (greater, "greater"), (scaled, "scaled")):
        node.output(0).set_names({name})
    model = ov.Model([ops.result(total), ops.result(greater), ops.result(scaled)], [a, b], "legacy")
    xml = save_ov(model, tmp_path, version="v10")
    np.savez(tmp_path / "inputs.npz", a=np.array([1, 5, -2], np.float16), b=np.array([3, 4, 5], np.int64))
    out = cli("compare", str(xml), "--inputs", str(tmp_path / "inputs.npz"), "--whole")
    assert out.returncode == 0 and "3 passed; no divergence" in out.stdout, out.stdout + out.stderr


def test_a_tol_pattern_that_picks_no_tensor_is_refused_before_any_work(tmp_path):
    out = cli("compare", str(MODELS / "small_cnn" / "model.xml"), "--random", "--tol", "Convolutoin=1e-2")
    assert out.returncode == 2 and "--tol Convolutoin=...: the pattern matches no tensor" in out.stderr
    np.savez(tmp_path / "a.npz", x=np.zeros(2))
    dumps = cli("compare", str(tmp_path / "a.npz"), str(tmp_path / "a.npz"), "--tol", "y=1")
    assert dumps.returncode == 2 and "matches no tensor" in dumps.stderr


def test_cli_compare_dumps_refuse_model_flags(tmp_path):
    np.savez(tmp_path / "a.npz", x=np.zeros(2))
    out = cli("compare", str(tmp_path / "a.npz"), str(tmp_path / "a.npz"), "--whole")
    assert out.returncode == 2 and "takes no model inputs" in out.stderr


@needs_openvino
def test_target_properties_reach_the_plugin_and_a_property_it_refuses_is_a_usage_error():
    from irscatter.errors import UsageError

    target = compare.open_target("openvino", "f32", properties={"DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"})
    try:
        assert target.describe().endswith("with DYNAMIC_QUANTIZATION_GROUP_SIZE=0")
        compiled = irscatter.read_model(MODELS / "small_cnn" / "model.xml").compile()
        feeds = dict(np.load(MODELS / "small_cnn" / "inputs.npz"))
        assert compare.compare_whole(compiled, feeds, target, Tolerances()).ok
    finally:
        target.close()
    with pytest.raises(UsageError, match="properties: OpenVINO refuses it: .*NO_SUCH_KEY"):
        compare.open_target("openvino", "f32", properties={"NO_SUCH_KEY": "1"})
    with pytest.raises(UsageError, match="INFERENCE_PRECISION_HINT: give the precision with precision$"):
        compare.open_target("openvino", "f32", properties={"INFERENCE_PRECISION_HINT": "f16"})


@needs_openvino
def test_compressed_weights_agree_once_decompressed_in_f32_as_the_cpu_plugin_does(target, tmp_path, monkeypatch):
    """OpenVINO's CPU plugin decompresses NNCF's weights inside its fully-connected kernel in
    f32 (runtime/decompression.py): with dynamic quantization off, the whole model agrees with
    irscatter's decompression in f32 to f32 rounding, and departs from the graph's f16 product."""
    from helpers import compressed_model

    from irscatter.debug.attribution import compare_against
    from irscatter.errors import UsageError

    monkeypatch.setattr(target, "properties", {"DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"})  # the module's worker
    xml, feeds = compressed_model(tmp_path)
    compiled = irscatter.read_model(xml).compile()

    def worst(decompression):
        report = compare_against(compiled, feeds, target, Tolerances(), whole=True, decompression=decompression)
        return report, max(t.diff.max_abs for record in report.outputs for t in record.tensors)

    (as_cpu, cpu_error), (_, graph_error) = worst("f32"), worst(None)
    assert as_cpu.passed and cpu_error < 1e-5, cpu_error
    assert graph_error > 100 * cpu_error, (graph_error, cpu_error)
    with pytest.raises(UsageError, match="applies to a whole model"):
        compare_against(compiled, feeds, target, Tolerances(), decompression="f32")


def test_decompression_is_refused_where_no_whole_model_is_judged(capsys, tmp_path):
    from irscatter import cli as command_line

    model = str(MODELS / "small_cnn" / "model.xml")
    np.savez(tmp_path / "a.npz", x=np.zeros(2))
    for args, message in ([model, "--random", "--decompression", "f32"], "--decompression only applies with --whole"), \
            ([model, "--random", "--whole", "--bisect", "--decompression", "f32"], "does not apply with --bisect"), \
            ([model, model, "--random", "--decompression", "f32"], "--decompression does not apply to two IRs"), \
            ([str(tmp_path / "a.npz")] * 2 + ["--decompression", "f32"], "--reference-precision, --decompression"):
        assert command_line.main(["compare", *args]) == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--random", "--target-config", "NOEQUALS"], "--target-config NOEQUALS: expects KEY=VALUE"),
    (["--random", "--target-config", "INFERENCE_PRECISION_HINT=f16"], "give the precision with --target-precision"),
])
def test_cli_target_config_usage_errors(args, message):
    out = cli("compare", str(MODELS / "small_cnn" / "model.xml"), *args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


@needs_openvino
def test_cli_target_config_reaches_the_plugin():
    out = cli("compare", str(MODELS / "small_cnn" / "model.xml"), "--random", "--whole",
              "--target-config", "DYNAMIC_QUANTIZATION_GROUP_SIZE=0")
    assert out.returncode == 0 and "with DYNAMIC_QUANTIZATION_GROUP_SIZE=0" in out.stdout, out.stdout + out.stderr


# --- the framework's values: conversion or runtime -----------------------------------------------


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    """Two 40-layer chains, one with the layer OpenVINO departs on (a runtime fault), one
    clean, each compiled with its feeds and irscatter's outputs (the framework's, unplanted)."""
    folder = tmp_path_factory.mktemp("framework")
    made = {}
    for kind, planted_at in (("faulty", 20), ("clean", None)):
        xml, feeds, _ = chain(folder, 40, planted_at, name=kind)
        compiled = irscatter.compile_model(xml)
        made[kind] = compiled, feeds, dict(compiled.run(feeds))
    return made


@needs_openvino
@pytest.mark.parametrize("runtime, conversion, verdict", [
    ("faulty", False, "runtime"), ("clean", True, "conversion"), ("faulty", True, "both"), ("clean", False, "neither"),
])
def test_the_verdict_tells_a_conversion_fault_from_a_runtime_fault(target, chains, runtime, conversion, verdict):
    from irscatter.debug import attribution

    compiled, feeds, outputs = chains[runtime]
    expected = {name: value + np.float32(0.25) if conversion else value for name, value in outputs.items()}
    report = attribution.compare_against(compiled, feeds, target, Tolerances(), whole=True,
                                         expected=expected, expected_file="fw.npz")
    judged = report.attribution
    assert judged.verdict == verdict and report.passed == (verdict == "neither")
    text = attribution.attributed_table(report).splitlines()
    assert text[-1] == judged.verdict_line() and attribution.VERDICTS[verdict] in text[-1]
    if conversion:  # the outputs alone name no layer, and say so
        assert 'output "y" departs, and fw.npz holds the outputs only' in text[-1]
    as_json = report.to_json()
    assert as_json["verdict"]["verdict"] == verdict and as_json["peak_held_bytes"] == report.held["peak_bytes"] > 0


@needs_openvino
def test_intermediate_framework_values_name_the_first_layer_that_departs(target, chains):
    from irscatter.debug import attribution

    compiled, feeds, outputs = chains["clean"]
    inside = compiled.run(feeds, intermediate=True)
    keys = [key for key in inside if key.startswith(("add_", "multiply_", "negative_"))]
    expected = {key: inside[key] for key in keys[4:16]} | outputs | {"no_such_tensor": np.zeros(1)}
    expected[keys[9]] = expected[keys[9]] * np.float32(1.01)  # departs there, and so does everything after
    expected[keys[12]] = expected[keys[12]] * np.float32(1.01)
    report = attribution.compare_against(compiled, feeds, target, Tolerances(), whole=True,
                                         expected=expected, expected_file="fw.npz")
    judged = report.attribution
    assert judged.verdict == "conversion" and not judged.outputs_only and not report.passed
    assert judged.first.tensors[0].key == keys[9] and judged.first.name == keys[9].split(":")[0]
    assert [r.status for r in judged.records].count("failed") == 2  # keys[9] and keys[12]: the outputs agree
    assert judged.unmatched.keys() == {"no_such_tensor"}
    assert f'in topological order: "{keys[9]}" of layer' in judged.verdict_line()
    assert report.held["peak_bytes"] < 40 * outputs["y"].nbytes  # whole: only the tensors judged are kept


def test_framework_keys_are_read_as_run_reads_outputs_and_as_tensor_names(tmp_path):
    from irscatter.debug import attribution
    from irscatter.ir.element_types import ElementType
    from irscatter.ir.graph import Layer, Port

    writer = IRWriter("named")
    x = writer.parameter("x", ElementType.f32, (2,), ("x", "relu:1"))  # a tensor name that is also an address
    relu = Layer(id=1, name="relu", type="Relu", version="opset1", inputs=[Port(id=0)], outputs=[Port(id=1)])
    (out,) = writer.copy(relu, [x], [(ElementType.f32, (2,))], [(ElementType.f32, (2,))], output_names=[("act",)])
    writer.result("y", out, ElementType.f32, (2,))
    compiled = irscatter.compile_model(writer.save(tmp_path / "named.xml"))
    relu_id = next(lid for lid in compiled.graph.order if compiled.graph.layers[lid].name == "relu")
    keys = ["x", "act", "relu:1", "tensor:relu:1", "port:relu:1", "nope"]
    matched, unmatched = attribution.resolve(compiled, keys)
    assert compiled.outputs[0].name == "act"  # the output's name, as run keys it
    assert matched == {"x": (0, 0), "act": (relu_id, 0), "tensor:relu:1": (0, 0), "port:relu:1": (relu_id, 0)}
    assert 'say "tensor:relu:1" or "port:relu:1"' in unmatched["relu:1"] and "names no tensor" in unmatched["nope"]


@needs_openvino
def test_a_tiny_memory_budget_spills_and_gives_the_same_report(target, chains):
    from irscatter.debug import attribution

    compiled, feeds, outputs = chains["faulty"]
    expected = {**outputs, "x:0": feeds["x"]}

    def judged(budget):
        report = attribution.compare_against(compiled, feeds, target, Tolerances(), expected=expected,
                                             budget=budget)
        as_json = report.to_json()
        return report, {k: v for k, v in as_json.items() if k not in ("seconds", "peak_held_bytes", "values_held")}

    (free, free_json), (tight, tight_json) = judged(None), judged(1024)
    assert tight_json == free_json and tight.attribution.verdict == "runtime"
    assert free.held["spilled_tensors"] == 0 and tight.held["spilled_tensors"] > 30
    assert tight.held["peak_bytes"] <= 1024 < free.held["peak_bytes"]
    assert "spilled to a temporary folder" in tight.held_line


def test_the_value_store_gives_back_every_kind_of_value_it_spilled():
    import ml_dtypes

    from irscatter import limits
    from irscatter.debug.held import ValueStore
    from irscatter.errors import UsageError

    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    values = {(1, 0): base, (2, 0): base[1:], (3, 0): np.float32(2.5).reshape(()), (4, 0): np.zeros((0, 3), np.int8),
              (5, 0): np.array([True, False]), (6, 0): np.ones(3, ml_dtypes.bfloat16),
              (7, 0): np.array(["a", "bc"], dtype=np.dtypes.StringDType())}
    with ValueStore(budget=48) as store:
        for key, value in values.items():
            store[key] = value
        assert store.peak_bytes == 48 and store.spilled == 3  # the view costs nothing; empty and strings stay
        for key, value in values.items():
            assert store[key].dtype == value.dtype and np.array_equal(store[key], value), key
        del store[(1, 0)], store[(6, 0)]
        assert store.held_bytes == 48 and (1, 0) not in store and len(store) == 5  # the view still holds the base
        del store[(2, 0)]
        assert store.held_bytes == 0
    with pytest.raises(UsageError, match="compare_bytes takes a whole number from 0"):
        limits.configure(compare_bytes=-1)


class _Kept:
    """The module's target, handed to the command line in this process and left open."""

    def __init__(self, target):
        self._target = target

    def __getattr__(self, name):
        return getattr(self._target, name)

    def close(self):
        return None


@needs_openvino
def test_cli_compare_expected_verdict_and_its_usage_errors(tmp_path, chains, target, monkeypatch, capsys):
    from irscatter import cli as command_line

    monkeypatch.setattr(compare, "open_target", lambda *args, **kwargs: _Kept(target))
    compiled, feeds, outputs = chains["clean"]
    np.savez(tmp_path / "inputs.npz", **feeds)
    np.savez(tmp_path / "fw.npz", **{name: value + np.float32(1) for name, value in outputs.items()})
    given = ["compare", compiled.model.source, "--inputs", str(tmp_path / "inputs.npz"), "--whole",
             "--expected", str(tmp_path / "fw.npz")]
    assert command_line.main(given) == 1
    text = capsys.readouterr().out.splitlines()
    assert text[-1].startswith("verdict: the IR itself departs from the framework (a conversion fault)")
    assert any(line.startswith("irscatter's values held in memory: at most ") for line in text)
    assert command_line.main([*given, "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"]["verdict"] == "conversion" and record["ok"] is True
    assert record["peak_held_bytes"] > 0 and record["values_held"]["spilled_tensors"] == 0
    assert command_line.main(["compare", str(tmp_path / "fw.npz"), str(tmp_path / "fw.npz"), "--expected",
                              str(tmp_path / "fw.npz")]) == 2
    assert "--expected" in capsys.readouterr().err
