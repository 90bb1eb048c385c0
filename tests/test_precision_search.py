"""`irscatter keep-f32` (`irscatter.debug.precision_search`): the layers that must stay in f32 for a
model to pass at f16 or bf16, written as the rt_info mark OpenVINO keeps a layer in f32 for.

The search is judged on a device this suite controls, whatever the CPU: irscatter itself
emulating f16 or bf16 (`run(precision=...)`), which keeps the marked layers in f32 as OpenVINO's
CPU plugin does. Its model overflows f16 in one known place: a MatMul whose values pass 65504,
brought back by the MVN after it. OpenVINO is asked only what this CPU lets it answer: whether
its IR reader takes the mark, and what `keep-f32` says on a CPU that runs f32 when asked for f16.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import cpu_note

import irscatter
from irscatter import cli as command_line
from irscatter.debug import compare, precision_search
from irscatter.debug.tolerances import Tolerances
from irscatter.ir.element_types import ElementType
from irscatter.ir.writer import IRWriter, Tensor, with_layer_rt_info
from irscatter.runtime.precision import RoundingPlan, keeps_f32

F32, I64 = ElementType.f32, ElementType.i64
needs_openvino = pytest.mark.skipif(importlib.util.find_spec("openvino") is None,
                                    reason="openvino is not installed, so the tests against it did not run")


class EmulatedDevice:
    """A target inferring in f16 or bf16 as irscatter emulates it, the file's marks honoured."""

    name = "emulated"

    def __init__(self, precision: str) -> None:
        self.precision = precision
        self.files: list[Path] = []

    def infer(self, xml, feeds):
        self.files.append(Path(xml))
        compiled = irscatter.read_model(xml).compile()
        outputs = compiled.run(feeds, precision=self.precision)
        return [np.asarray(outputs[spec.name]) for spec in compiled.outputs]

    def output_names(self, xml):
        return [[spec.name, *spec.names] for spec in irscatter.read_model(xml).compile().outputs]

    def ran_precision(self) -> str:
        return self.precision

    def describe(self) -> str:
        return f"irscatter emulating {self.precision}"

    def close(self) -> None:
        return None


class _Graph:
    """A model written layer by layer with IRWriter."""

    def __init__(self, name: str) -> None:
        self.writer = IRWriter(name)

    def op(self, name: str, type_: str, sources: list[Tensor], ins: list, out: tuple, version: str = "opset1",
           attrs: dict[str, str] | None = None, names: tuple[str, ...] = ()) -> Tensor:
        return self.writer.layer(type_, version, sources, ins, [out], name=name, attrs=attrs,
                                 output_names=[names])[0]


def overflowing(folder: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """x -> scale -> shift -> "project" (MatMul to values near 1e5) -> "normalize" (MVN) -> add a
    "side" branch (Tanh of the shifted x, run between the two) -> MatMul -> bias -> Relu. In f16
    the projection overflows to inf and the MVN makes NaN of it: both must stay in f32 (the MVN
    reading the projection rounded would see the inf), and nothing else need."""
    rng = np.random.default_rng(3)
    g = _Graph("overflow")
    w = g.writer
    s, o = (4, 16), (4, 8)
    x = w.parameter("x", F32, s, ("x",))
    scaled = g.op("scale_x", "Multiply", [x, w.const("scale", rng.uniform(0.5, 1.5, 16).astype(np.float32))],
                  [(F32, s), (F32, (16,))], (F32, s))
    shifted = g.op("shift_x", "Add", [scaled, w.const("shift", rng.uniform(-0.5, 0.5, 16).astype(np.float32))],
                   [(F32, s), (F32, (16,))], (F32, s))
    big = (rng.uniform(-1, 1, (16, 16)) * 2e4).astype(np.float32)  # each weight within f16, their sums not
    projected = g.op("project", "MatMul", [shifted, w.const("w_big", big)], [(F32, s), (F32, (16, 16))], (F32, s))
    side = g.op("side", "Tanh", [shifted], [(F32, s)], (F32, s))
    normalized = g.op("normalize", "MVN", [projected, w.const("axes", np.array([1], np.int64))],
                      [(F32, s), (I64, (1,))], (F32, s), "opset6",
                      {"normalize_variance": "true", "eps": "1e-05", "eps_mode": "inside_sqrt"})
    mixed = g.op("mix", "Add", [normalized, side], [(F32, s), (F32, s)], (F32, s))
    head = g.op("head", "MatMul", [mixed, w.const("w_head", rng.uniform(-1, 1, (16, 8)).astype(np.float32))],
                [(F32, s), (F32, (16, 8))], (F32, o))
    biased = g.op("head_bias", "Add", [head, w.const("bias", rng.uniform(-0.1, 0.1, 8).astype(np.float32))],
                  [(F32, o), (F32, (8,))], (F32, o))
    y = g.op("act", "Relu", [biased], [(F32, o)], (F32, o), names=("y",))
    w.result("y", y, F32, o)
    xml = w.save(folder / "model.xml")
    feeds = {"x": rng.normal(size=s).astype(np.float32)}
    np.savez(folder / "inputs.npz", **feeds)
    return xml, feeds


def _names(compiled, marks) -> set[str]:
    return {compiled.graph.layers[lid].name for lid in marks}


def test_the_search_finds_the_overflowing_matmul_and_its_normalization_and_the_marked_file_passes(tmp_path):
    xml, feeds = overflowing(tmp_path)
    compiled = irscatter.read_model(xml).compile()
    device = EmulatedDevice("f16")
    found = precision_search.search(compiled, feeds, device, Tolerances("f16"))
    assert found.status == "marked" and not found.baseline.passed and found.last.passed
    assert _names(compiled, found.marks) == {"project", "normalize"}  # the side branch was pruned away
    assert found.candidates == 9 and found.trials <= 12
    assert "pruned to 2" in found.steps[-1]
    text = "\n".join(precision_search.summary(found, compiled))
    assert '"project" (MatMul-1) (line ' in text and '"normalize" (MVN-6) (line ' in text
    assert 'as it is: output "y":' in text

    out = precision_search.write_marked(compiled, found.marks, tmp_path / "kept" / "model.xml")
    assert out.with_suffix(".bin").read_bytes() == xml.with_suffix(".bin").read_bytes()
    marked = irscatter.read_model(out).compile()
    assert {marked.graph.layers[lid].name for lid in marked.graph.order if keeps_f32(marked.graph.layers[lid].rt_info)} == \
        {"project", "normalize"}
    assert precision_search.verify(compiled, feeds, device, Tolerances("f16"), out).passed
    assert not xml.read_text().count("rt_info")  # the model read is left as it was


def test_a_model_that_passes_as_it_is_is_written_unmarked_and_one_no_mark_can_save_is_refused(tmp_path):
    xml, feeds = overflowing(tmp_path)
    compiled = irscatter.read_model(xml).compile()
    found = precision_search.search(compiled, feeds, EmulatedDevice("bf16"), Tolerances("bf16"))
    assert (found.status, found.marks, found.trials) == ("passes", (), 1)  # bf16 holds 1e5
    assert found.note == "its outputs pass at bf16 as they are"

    # An output past 65504: the device hands its outputs over in f16, kept layers' too.
    g = _Graph("too_big")
    x = g.writer.parameter("x", F32, (3,), ("x",))
    y = g.op("grow", "Multiply", [x, g.writer.const("k", np.float32([1e3]))], [(F32, (3,)), (F32, (1,))],
             (F32, (3,)), names=("y",))
    g.writer.result("y", y, F32, (3,))
    small = irscatter.read_model(g.writer.save(tmp_path / "big.xml")).compile()
    lost = precision_search.search(small, {"x": np.float32([1, 50, 100])}, EmulatedDevice("f16"),
                                   Tolerances("f16"))
    assert lost.status == "impossible" and lost.trials == 2
    assert "even with all 1 layers that make float values kept in f32" in lost.note
    assert "every layer kept: output \"y\"" in "\n".join(precision_search.summary(lost, small))


def test_the_emulation_keeps_a_layer_marked_as_openvino_reads_the_mark(tmp_path):
    """`precise` and `DisablePrecisionConversion` from any type to f16 keep a layer in f32; a
    mark for another conversion, or the name OpenVINO's reader no longer knows, keep nothing."""
    assert keeps_f32({"precise": {"version": "0"}})
    assert keeps_f32({"DisablePrecisionConversion": {"version": "0", "value": "f32:bf16;dynamic:f16"}})
    assert keeps_f32({"DisablePrecisionConversion": {"version": "0", "value": "dynamic:dynamic"}})
    assert not keeps_f32({"DisablePrecisionConversion": {"version": "0", "value": "f32:f16"}})
    assert not keeps_f32({"disable_fp16_compression": {"version": "0"}})
    assert not keeps_f32({"precise": {"version": "1"}})
    xml, _ = overflowing(tmp_path)
    compiled = irscatter.read_model(xml).compile()
    ids = {compiled.graph.layers[lid].name: lid for lid in compiled.graph.order}
    mark = {"precise": {"version": "0"}}
    text = with_layer_rt_info(xml.read_bytes(), str(xml), {ids["side"]: mark, ids["project"]: mark})
    (tmp_path / "marked.xml").write_bytes(text)
    (tmp_path / "marked.bin").write_bytes(xml.with_suffix(".bin").read_bytes())
    marked = irscatter.read_model(tmp_path / "marked.xml").compile()
    def weights(model):
        return next(slot for slot, layer in model.plan.const_slots if layer.name == "w_big")

    for precision in ("f16", "bf16"):
        assert {ids["side"], ids["project"]} <= RoundingPlan(marked, precision).kept
        assert not {ids["side"], ids["project"]} & RoundingPlan(compiled, precision).kept
        # the kept MatMul reads its weights whole, where the device would have rounded them
        assert weights(marked) not in RoundingPlan(marked, precision).consts
        assert weights(compiled) in RoundingPlan(compiled, precision).consts


def test_the_command_line_exit_status(tmp_path, monkeypatch, capsys):
    """0 passes (with or without marks), 1 no marks make it pass, 2 a usage error; run in this
    process with the emulated device standing in for OpenVINO."""
    xml, _ = overflowing(tmp_path)
    monkeypatch.setattr(compare, "open_target", lambda spec, precision, timeout, properties=None: EmulatedDevice(precision))
    args = ["keep-f32", str(xml), "--inputs", str(tmp_path / "inputs.npz"), "--quiet"]
    assert command_line.main([*args, "-o", str(tmp_path / "kept.xml")]) == 0
    said = capsys.readouterr().out
    assert "keep in f32: 2 of the 9 layers" in said and "run on the target it passes" in said
    assert "2 layers marked to stay in f32" in said
    assert command_line.main([*args, "-o", str(tmp_path / "bf16"), "--target-precision", "bf16"]) == 0
    assert "nothing needs keeping in f32" in capsys.readouterr().out and (tmp_path / "bf16.xml").exists()
    assert command_line.main([*args, "-o", str(tmp_path / "lost.xml"), "--atol", "0", "--rtol", "0"]) == 1
    assert "no set of layers kept in f32 makes the outputs pass" in capsys.readouterr().out
    assert not (tmp_path / "lost.xml").exists()
    assert command_line.main([*args, "-o", str(xml)]) == 2  # over the model read
    assert "would write over the model read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        command_line.main([*args, "-o", str(tmp_path / "f32.xml"), "--target-precision", "f32"])
    assert stopped.value.code == 2


@needs_openvino
def test_openvino_reads_the_mark_as_its_own(tmp_path):
    """OpenVINO's IR reader turns the written mark into the attribute its CPU plugin keeps a node's
    precision for (DisablePrecisionConversion from any type to f16), and writes it back so."""
    xml, _ = overflowing(tmp_path)
    compiled = irscatter.read_model(xml).compile()
    ids = {compiled.graph.layers[lid].name: lid for lid in compiled.graph.order}
    out = precision_search.write_marked(compiled, [ids["project"]], tmp_path / "marked" / "model.xml")
    script = ("import sys, openvino as ov; m = ov.Core().read_model(sys.argv[1]); "
              "print({o.get_friendly_name(): sorted(o.get_rt_info().keys()) for o in m.get_ops()}); "
              "ov.save_model(m, sys.argv[2], compress_to_fp16=False)")
    done = subprocess.run([sys.executable, "-c", script, str(out), str(tmp_path / "saved.xml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    keys = eval(done.stdout)  # a dict literal printed by the script above
    assert keys["project"] == ["DisablePrecisionConversion_0"] and keys["normalize"] == []
    saved = (tmp_path / "saved.xml").read_text()
    assert saved.count('<attribute name="DisablePrecisionConversion" version="0" value="dynamic:f16" />') == 1


@needs_openvino
def test_keep_f32_on_openvino(tmp_path, capsys):
    """On a CPU that runs f32 when asked for f16 the command says so, marks nothing and passes; on
    one that runs f16 the search runs on OpenVINO itself and the marked file must pass. (The
    command runs in this process; OpenVINO in its worker, as always.)"""
    xml, _ = overflowing(tmp_path)
    status = command_line.main(["keep-f32", str(xml), "--inputs", str(tmp_path / "inputs.npz"), "--quiet",
                                "--target", "openvino:CPU", "--target-precision", "f16", "-o", str(tmp_path / "kept")])
    said = capsys.readouterr()
    assert status == 0, said.out + said.err
    if "CPU at f32 (asked for f16" in said.out:
        cpu_note("this CPU runs f32 when asked for f16: keep-f32 found nothing to keep")
        assert "nothing needs keeping in f32: the target ran f32, where a mark changes nothing" in said.out
        assert "no layer marked" in said.out
    else:
        cpu_note("this CPU runs f16: keep-f32 searched on OpenVINO itself")
    assert "run on the target it passes" in said.out and (tmp_path / "kept.bin").exists()
