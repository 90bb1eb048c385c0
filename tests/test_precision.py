"""Precision emulation (`run(precision="f16"|"bf16")`, `irscatter run --precision`): which layers
stay in f32, how values are rounded, that a plain run is untouched, and how close the emulation
comes to OpenVINO's CPU plugin told to infer in a lower precision."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from helpers import cli, cpu_note

import irscatter
from irscatter.ir.writer import IRWriter
from irscatter.runtime.precision import RoundingPlan, emulated_precision, emulating, rounded

CONTROL = Path(__file__).parent / "data" / "control"


class IRBuilder:
    """A small IR written layer by layer with the package's writer: each call returns the
    reference (tensor, element type, dims) of the new layer's output, for the next layer to read."""

    def __init__(self) -> None:
        self.writer = IRWriter()

    def param(self, name: str, dims, dtype=np.float32):
        et = irscatter.ElementType.from_dtype(np.dtype(dtype))
        return self.writer.parameter(name, et, tuple(dims), (name,)), et, tuple(dims)

    def const(self, name: str, array) -> tuple:
        array = np.ascontiguousarray(array)
        return self.writer.const(name, array), irscatter.ElementType.from_dtype(array.dtype), array.shape

    def op(self, name: str, type_: str, inputs, dims, *, data=None, version="opset1", precision="FP32") -> tuple:
        et = irscatter.ElementType.from_precision(precision)
        (out,) = self.writer.layer(type_, version, [ref[0] for ref in inputs], [ref[1:] for ref in inputs],
                                   [(et, tuple(dims))], name=name, attrs={k: str(v) for k, v in (data or {}).items()})
        return out, et, tuple(dims)

    def result(self, name: str, ref) -> None:
        self.writer.result(name, *ref)

    def save(self, folder: Path, name: str = "model") -> Path:
        return self.writer.save(folder / f"{name}.xml")


NUMPY = {"auto_broadcast": "numpy"}


def axes(b: IRBuilder, name: str, *values: int):
    return b.const(name, np.array(values, dtype=np.int64))


def kept_names(xml: Path, precision: str) -> set[str]:
    compiled = irscatter.read_model(xml).compile()
    return {compiled.graph.layers[lid].name for lid in RoundingPlan(compiled, precision).kept}


def is_representable(array: np.ndarray, dtype) -> bool:
    """Whether every finite f32 value survives a round trip through `dtype` unchanged."""
    finite = array[np.isfinite(array)]
    return bool(np.array_equal(finite.astype(dtype).astype(np.float32), finite))


# --- which layers stay in f32 --------------------------------------------------------------------


def softmax_then_matmul(folder: Path) -> Path:
    """x - max(x) -> Exp -> /sum -> *3 -> MatMul, and a second Exp that feeds no reduction."""
    b = IRBuilder()
    x = b.param("x", (2, 8))
    peak = b.op("peak", "ReduceMax", [x, axes(b, "ax_max", 1)], (2, 1), data={"keep_dims": "true"})
    shifted = b.op("shifted", "Subtract", [x, peak], (2, 8), data=NUMPY)
    exp = b.op("exp", "Exp", [shifted], (2, 8))
    total = b.op("total", "ReduceSum", [exp, axes(b, "ax_sum", 1)], (2, 1), data={"keep_dims": "true"})
    soft = b.op("soft", "Divide", [exp, total], (2, 8), data=NUMPY)
    scaled = b.op("scaled", "Multiply", [soft, b.const("three", np.float32(3))], (2, 8), data=NUMPY)
    dense = b.op("dense", "MatMul", [scaled, b.const("w", np.eye(8, dtype=np.float32))], (2, 8),
                 data={"transpose_a": "false", "transpose_b": "false"})
    b.result("out", dense)
    lonely = b.op("lonely_exp", "Exp", [x], (2, 8))
    relu = b.op("relu", "Relu", [lonely], (2, 8))
    b.result("out2", relu)
    return b.save(folder)


def test_f16_keeps_an_exp_summed_by_a_reduction_and_what_it_spreads_to(tmp_path):
    kept = kept_names(softmax_then_matmul(tmp_path), "f16")
    # the Exp feeding ReduceSum, spread down to the division and the scaling, and up to the
    # subtraction and the scaling's Const; a MatMul, a ReduceMax and integer axes stop it
    assert {"exp", "total", "soft", "scaled", "three", "shifted"} <= kept
    assert not {"dense", "w", "peak", "ax_sum", "ax_max", "lonely_exp", "relu", "x"} & kept


def test_bf16_keeps_the_graph_tail_behind_the_last_heavy_layer(tmp_path):
    b = IRBuilder()
    x = b.param("x", (2, 4))
    mm = {"transpose_a": "false", "transpose_b": "false"}
    h = b.op("fc1", "MatMul", [x, b.const("w1", np.ones((4, 4), np.float32))], (2, 4), data=mm)
    h = b.op("bias1", "Add", [h, b.const("b1", np.ones(4, np.float32))], (2, 4), data=NUMPY)
    h = b.op("act1", "Relu", [h], (2, 4))
    h = b.op("fc2", "MatMul", [h, b.const("w2", np.ones((4, 4), np.float32))], (2, 4), data=mm)
    h = b.op("bias2", "Add", [h, b.const("b2", np.ones(4, np.float32))], (2, 4), data=NUMPY)
    h = b.op("act2", "Sigmoid", [h], (2, 4))
    b.result("out", h)
    kept = kept_names(b.save(tmp_path), "bf16")
    assert {"bias2", "b2", "act2"} <= kept
    assert not {"fc1", "bias1", "act1", "fc2"} & kept


def test_bf16_counts_a_convolutions_bias_and_activation_as_part_of_its_kernel(tmp_path):
    kept = kept_names(convnet(tmp_path), "bf16")
    assert not {"conv1", "bias1", "act1", "conv2", "bias2", "c1", "c2"} & kept


@pytest.mark.parametrize("eps, kept", [(1e-12, True), (1e-3, False)])
def test_f16_keeps_a_division_guarded_by_a_tiny_eps(tmp_path, eps, kept):
    """y / sqrt(sum(y*y) + eps): an eps below f16's smallest normal would flush to zero."""
    b = IRBuilder()
    y = b.param("y", (2, 8))
    square = b.op("square", "Multiply", [y, y], (2, 8), data=NUMPY)
    total = b.op("total", "ReduceSum", [square, axes(b, "ax", 1)], (2, 1), data={"keep_dims": "true"})
    guarded = b.op("guarded", "Add", [total, b.const("eps", np.float32(eps))], (2, 1), data=NUMPY)
    root = b.op("root", "Sqrt", [guarded], (2, 1))
    b.result("out", b.op("normed", "Divide", [y, root], (2, 8), data=NUMPY))
    names = kept_names(b.save(tmp_path), "f16")
    if kept:  # the division, and up through the sqrt, the guard, the sum and the square
        assert {"normed", "root", "guarded", "eps", "total", "square"} <= names
    else:
        assert names.isdisjoint({"normed", "root", "guarded", "eps", "total", "square"})


def test_f16_keeps_a_negative_power_of_a_guard(tmp_path):
    b = IRBuilder()
    x = b.param("x", (4,))
    floor = b.op("floor", "Maximum", [x, b.const("eps", np.float32(1e-9))], (4,), data=NUMPY)
    power = b.op("power", "Power", [floor, b.const("minus_half", np.float32(-0.5))], (4,), data=NUMPY)
    b.result("out", b.op("scaled", "Multiply", [x, power], (4,), data=NUMPY))
    assert {"scaled", "power", "floor", "eps", "minus_half"} <= kept_names(b.save(tmp_path), "f16")


def test_a_shape_computed_in_floats_stays_f32(tmp_path):
    """ShapeOf -> Convert(f32) -> Multiply -> Convert(i64) -> Reshape's target shape."""
    b = IRBuilder()
    x = b.param("x", (4, 6))
    shape = b.op("shape", "ShapeOf", [x], (2,), version="opset3", data={"output_type": "i64"}, precision="I64")
    as_float = b.op("as_float", "Convert", [shape], (2,), data={"destination_type": "f32"})
    halved = b.op("same", "Multiply", [as_float, b.const("ones", np.ones(2, np.float32))], (2,), data=NUMPY)
    target = b.op("target", "Convert", [halved], (2,), data={"destination_type": "i64"}, precision="I64")
    reshaped = b.op("reshaped", "Reshape", [x, target], (4, 6), data={"special_zero": "false"})
    b.result("out", b.op("neg", "Negative", [reshaped], (4, 6)))
    xml = b.save(tmp_path)
    for precision in ("f16", "bf16"):
        kept = kept_names(xml, precision)
        assert {"shape", "as_float", "same", "ones", "target"} <= kept
        assert "neg" not in kept or precision == "bf16"  # in bf16 the tail is kept anyway


# --- what rounding does --------------------------------------------------------------------------


def overflowing_chain(folder: Path) -> Path:
    """x*x (1e4) -> *20 (2e5, beyond f16's 65504) -> -60000 (1.4e5 in f32)."""
    b = IRBuilder()
    x = b.param("x", (1, 4))
    square = b.op("square", "Multiply", [x, x], (1, 4), data=NUMPY)
    big = b.op("big", "Multiply", [square, b.const("twenty", np.float32(20))], (1, 4), data=NUMPY)
    back = b.op("back", "Add", [big, b.const("minus", np.float32(-60000))], (1, 4), data=NUMPY)
    b.result("out", back)
    return b.save(folder)


def test_f16_overflow_shows_inf_at_the_layer_that_overflows(tmp_path):
    model = irscatter.read_model(overflowing_chain(tmp_path))
    x = np.full((1, 4), 100.0, np.float32)
    plain = model.run({"x": x})["out"]
    assert np.all(plain == 140000)

    first_inf: list[str] = []

    def watch(layer, inputs, outputs):
        if not first_inf and any(np.isinf(o).any() for o in outputs):
            first_inf.append(layer.name)

    emulated = model.run({"x": x}, precision="f16", hook=watch)["out"]
    assert first_inf == ["big"]
    assert np.all(np.isposinf(emulated))
    recorded = model.run({"x": x}, precision="f16", intermediate=True)
    assert np.all(np.isfinite(recorded["square:2"])) and np.all(np.isinf(recorded["big:2"]))


def bf16_nearest_even(values: np.ndarray) -> np.ndarray:
    """bf16 rounding spelled out on the bits, one value at a time: keep the top 16 bits, adding
    one when the dropped half is above a half, or exactly a half and the kept part is odd."""
    out = []
    for v in values.astype(np.float32):
        bits = struct.unpack("<I", struct.pack("<f", float(v)))[0]
        kept, dropped = bits >> 16, bits & 0xFFFF
        if dropped > 0x8000 or (dropped == 0x8000 and kept & 1):
            kept += 1
        out.append(struct.unpack("<f", struct.pack("<I", (kept << 16) & 0xFFFFFFFF))[0])
    return np.array(out, np.float32)


def test_bf16_rounds_to_nearest_even():
    ties = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 2.0**-8), 2 + 2.0**-7, 1 + 2.0**-8 + 2.0**-20], np.float32)
    assert rounded(ties, "bf16").tolist() == [1.0, 1 + 2.0**-6, -1.0, 2.0, 1 + 2.0**-7]
    draws = np.random.default_rng(0).standard_normal(2000).astype(np.float32) * 1e3
    assert np.array_equal(rounded(draws, "bf16"), bf16_nearest_even(draws))


def test_bf16_run_rounds_what_a_heavy_layer_reads_and_writes(tmp_path):
    b = IRBuilder()
    x = b.param("x", (1, 4))
    positive = b.op("positive", "Abs", [x], (1, 4))
    same = b.op("same", "MatMul", [positive, b.const("eye", np.eye(4, dtype=np.float32))], (1, 4),
                data={"transpose_a": "false", "transpose_b": "false"})
    b.result("out", same)
    model = irscatter.read_model(b.save(tmp_path))
    x = np.array([[1 + 2.0**-8, 1 + 3 * 2.0**-8, 3.14159265, 1e-3]], np.float32)
    assert np.array_equal(model.run({"x": x})["out"], x)
    assert np.array_equal(model.run({"x": x}, precision="bf16")["out"], bf16_nearest_even(x[0])[None])


def test_integer_tensors_are_untouched(tmp_path):
    b = IRBuilder()
    n = b.param("n", (3,), np.int64)
    b.result("out", b.op("sum", "Add", [n, b.const("offset", np.array([70001, 123457, -99999], np.int64))],
                         (3,), data=NUMPY, precision="I64"))
    model = irscatter.read_model(b.save(tmp_path))
    n = np.array([65519, 1 << 40, 3], np.int64)
    for precision in ("f16", "bf16"):
        assert model.run({"n": n}, precision=precision)["out"].tolist() == [135520, (1 << 40) + 123457, -99996]


def test_fed_inputs_are_rounded_but_never_written(tmp_path):
    model = irscatter.read_model(overflowing_chain(tmp_path))
    x = np.full((1, 4), 1.0001, np.float32)
    kept = x.copy()
    recorded = model.run({"x": x}, precision="f16", intermediate=True)
    assert np.array_equal(x, kept)
    assert recorded["x:0"][0, 0] == np.float32(np.float16(1.0001))


def test_without_a_precision_the_run_is_bit_identical(tmp_path):
    model = irscatter.read_model(softmax_then_matmul(tmp_path))
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32) * 7
    before = model.run({"x": x}, intermediate=True)
    after = model.run({"x": x}, intermediate=True, precision=None)
    assert before.keys() == after.keys()
    for key in before:
        assert before[key].tobytes() == after[key].tobytes(), key
    emulated = model.run({"x": x}, intermediate=True, precision="f16")
    assert any(before[k].tobytes() != emulated[k].tobytes() for k in before)
    assert emulated_precision() is None  # the run leaves no emulation behind


def test_f16_rounds_every_value_except_the_kept_ones(tmp_path):
    xml = softmax_then_matmul(tmp_path)
    model = irscatter.read_model(xml)
    kept = kept_names(xml, "f16")
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32) * 3
    recorded = model.run({"x": x}, intermediate=True, precision="f16")
    for key, value in recorded.items():
        # (x as fed: a kept layer reads it whole, each other reader rounds it as it reads it)
        if value.dtype == np.float32 and key.split(":")[0] not in kept | {"x"}:
            assert is_representable(value, np.float16), key
    assert not is_representable(recorded["soft:2"], np.float16)  # kept in f32, and it shows
    outputs = model.run({"x": x}, precision="f16")  # the device hands its outputs over rounded
    assert all(is_representable(v, np.float16) for v in outputs.values())


def test_a_fed_input_is_read_whole_by_a_kept_layer_and_rounded_by_the_others(tmp_path):
    """x feeds the Subtract kept with the Exp after it, and the ReduceMax that is not kept: the
    CPU plugin's kept Exp sees x as fed (exp of the rounded x was 1 ulp off in 6 of 64 rows)."""
    model = irscatter.read_model(softmax_then_matmul(tmp_path))
    seen: dict[str, tuple] = {}
    x = np.random.default_rng(5).standard_normal((2, 8)).astype(np.float32) * 3
    model.run({"x": x}, precision="f16", hook=lambda layer, inputs, outputs: seen.setdefault(layer.name, inputs))
    assert np.array_equal(seen["shifted"][0], x) and not is_representable(x, np.float16)
    assert is_representable(seen["peak"][0], np.float16)


def test_a_kept_value_is_read_rounded_by_a_rounded_layer_only(tmp_path):
    """`scaled` stays f32 (it follows the softmax); the MatMul after it reads it rounded, as the
    device converts it on the way in, while the record keeps what `scaled` computed."""
    model = irscatter.read_model(softmax_then_matmul(tmp_path))
    seen: dict[str, tuple] = {}
    x = np.random.default_rng(4).standard_normal((2, 8)).astype(np.float32)
    recorded = model.run({"x": x}, precision="f16", intermediate=True,
                         hook=lambda layer, inputs, outputs: seen.setdefault(layer.name, inputs))
    assert not is_representable(recorded["scaled:2"], np.float16)
    assert is_representable(seen["dense"][0], np.float16)
    assert np.array_equal(seen["dense"][0], rounded(recorded["scaled:2"], "f16"))


def test_what_a_fused_kernel_applies_to_its_accumulator_is_not_rounded_between(tmp_path):
    """MatMul -> +bias -> Relu run as one kernel: only the Relu's output is stored rounded."""
    b = IRBuilder()
    x = b.param("x", (4, 16))
    rng = np.random.default_rng(5)
    h = b.op("dense", "MatMul", [x, b.const("w", rng.standard_normal((16, 16)).astype(np.float32))], (4, 16),
             data={"transpose_a": "false", "transpose_b": "false"})
    h = b.op("bias", "Add", [h, b.const("b", rng.standard_normal(16).astype(np.float32))], (4, 16), data=NUMPY)
    h = b.op("act", "Relu", [h], (4, 16))
    b.result("out", b.op("twice", "Multiply", [h, h], (4, 16), data=NUMPY))
    model = irscatter.read_model(b.save(tmp_path))
    recorded = model.run({"x": rng.standard_normal((4, 16)).astype(np.float32)}, precision="f16", intermediate=True)
    assert not is_representable(recorded["dense:2"], np.float16)
    assert not is_representable(recorded["bias:2"], np.float16)
    assert is_representable(recorded["act:1"], np.float16) and is_representable(recorded["twice:2"], np.float16)


def test_an_emulation_block_covers_every_run_inside_it(tmp_path):
    model = irscatter.read_model(overflowing_chain(tmp_path))
    x = np.full((1, 4), 100.0, np.float32)
    with emulating("f16"):
        assert np.all(np.isinf(model.run({"x": x})["out"]))
    assert np.all(np.isfinite(model.run({"x": x})["out"]))
    with pytest.raises(irscatter.IRError, match="precision must be one of f16, bf16"):
        model.run({"x": x}, precision="f8")


@pytest.mark.parametrize("name", ["loop_growing", "ti_forward", "if_fed"])
def test_the_bodies_of_control_flow_are_rounded(name):
    model = irscatter.read_model(CONTROL / f"{name}.xml")
    feeds = dict(np.load(CONTROL / f"{name}.npz"))
    rng = np.random.default_rng(3)
    for key, value in feeds.items():  # values with every mantissa bit in use
        if value.dtype == np.float32:
            feeds[key] = (value + rng.uniform(0.01, 0.02, value.shape)).astype(np.float32)
    plain = model.run(feeds, intermediate=True)
    emulated = model.run(feeds, intermediate=True, precision="f16")
    inner = [key for key in emulated if "/" in key and emulated[key].dtype == np.float32]
    assert inner, "the record holds the bodies' values"
    assert all(is_representable(emulated[key], np.float16) for key in inner)
    assert not all(is_representable(plain[key], np.float16) for key in inner)


def test_cli_run_with_precision(tmp_path):
    xml = overflowing_chain(tmp_path)
    np.save(tmp_path / "x.npy", np.full((1, 4), 100.0, np.float32))
    plain = cli("run", str(xml), "-i", f"x={tmp_path / 'x.npy'}", "--json")
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["out"]["values"] == [[140000.0] * 4]
    emulated = cli("run", str(xml), "-i", f"x={tmp_path / 'x.npy'}", "--json", "--precision", "f16")
    assert emulated.returncode == 0, emulated.stderr
    assert json.loads(emulated.stdout)["out"]["values"] == [["inf"] * 4]
    refused = cli("run", str(xml), "--random", "--precision", "f8")
    assert refused.returncode == 2 and "--precision" in refused.stderr
    helped = cli("run", "--help")
    assert "--precision" in helped.stdout and "65504" in helped.stdout


# --- against OpenVINO's CPU plugin ---------------------------------------------------------------


def mlp(folder: Path, seed: int = 0) -> Path:
    """Two dense layers with a ReLU between them, and a softmax made of its parts."""
    rng = np.random.default_rng(seed)
    b = IRBuilder()
    mm = {"transpose_a": "false", "transpose_b": "false"}
    x = b.param("x", (8, 64))
    h = b.op("fc1", "MatMul", [x, b.const("w1", (rng.standard_normal((64, 128)) * 0.3).astype(np.float32))],
             (8, 128), data=mm)
    h = b.op("bias1", "Add", [h, b.const("b1", rng.standard_normal(128).astype(np.float32))], (8, 128), data=NUMPY)
    h = b.op("act1", "Relu", [h], (8, 128))
    h = b.op("fc2", "MatMul", [h, b.const("w2", (rng.standard_normal((128, 32)) * 0.2).astype(np.float32))],
             (8, 32), data=mm)
    logits = b.op("bias2", "Add", [h, b.const("b2", rng.standard_normal(32).astype(np.float32))], (8, 32), data=NUMPY)
    b.result("logits", logits)
    exp = b.op("exp", "Exp", [logits], (8, 32))
    total = b.op("total", "ReduceSum", [exp, axes(b, "ax", 1)], (8, 1), data={"keep_dims": "true"})
    b.result("probs", b.op("probs", "Divide", [exp, total], (8, 32), data=NUMPY))
    return b.save(folder)


def convnet(folder: Path, seed: int = 0) -> Path:
    """Two 3x3 convolutions, each with a bias, a ReLU after the first."""
    rng = np.random.default_rng(seed)
    b = IRBuilder()
    conv = {"strides": "1,1", "pads_begin": "1,1", "pads_end": "1,1", "dilations": "1,1", "auto_pad": "explicit"}
    x = b.param("x", (1, 8, 12, 12))
    h = b.op("conv1", "Convolution", [x, b.const("k1", (rng.standard_normal((16, 8, 3, 3)) * 0.2).astype(np.float32))],
             (1, 16, 12, 12), data=conv)
    h = b.op("bias1", "Add", [h, b.const("c1", rng.standard_normal((1, 16, 1, 1)).astype(np.float32))],
             (1, 16, 12, 12), data=NUMPY)
    h = b.op("act1", "Relu", [h], (1, 16, 12, 12))
    h = b.op("conv2", "Convolution", [h, b.const("k2", (rng.standard_normal((8, 16, 3, 3)) * 0.2).astype(np.float32))],
             (1, 8, 12, 12), data=conv)
    h = b.op("bias2", "Add", [h, b.const("c2", rng.standard_normal((1, 8, 1, 1)).astype(np.float32))], (1, 8, 12, 12),
             data=NUMPY)
    b.result("y", h)
    return b.save(folder)


MODELS = {"mlp": (mlp, (8, 64), ("logits", "probs")), "convnet": (convnet, (1, 8, 12, 12), ("y",))}


@pytest.mark.parametrize("precision", ["f16", "bf16"])
@pytest.mark.parametrize("kind", list(MODELS))
def test_emulation_is_closer_to_the_cpu_plugin_than_f32(tmp_path, kind, precision):
    from irscatter.targets import TargetFailure
    from irscatter.targets.openvino import OpenVINOProcess

    build, shape, names = MODELS[kind]
    xml = build(tmp_path)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    config = {"INFERENCE_PRECISION_HINT": precision}
    with OpenVINOProcess() as openvino:
        try:
            ran = openvino.inference_precision("CPU", config)["precision"]
            device = openvino.infer(xml, {"x": x}, config=config)
        except TargetFailure as e:
            pytest.skip(f"OpenVINO's CPU plugin does not infer in {precision} here: {e}")
    model = irscatter.read_model(xml)
    plain = model.run({"x": x})
    if ran == "f32":  # no f16/bf16 arithmetic on this CPU: the plugin computes what a plain run does
        cpu_note(f"OpenVINO's CPU plugin runs f32 when asked for {precision} here: checked that its answer "
                 "is irscatter's f32 one")
        for i, name in enumerate(names):
            np.testing.assert_allclose(device[i], plain[name], rtol=1e-5, atol=1e-5, err_msg=name)  # f16 would be 1e-3 off
        return
    if ran != precision:
        cpu_note(f"OpenVINO's CPU plugin runs {ran} when asked for {precision} here: emulated in {ran}")
    emulated = model.run({"x": x}, precision=ran)
    for i, name in enumerate(names):
        plain_error = np.abs(plain[name] - device[i])
        emulated_error = np.abs(emulated[name] - device[i])
        print(f"\n{kind} {ran} {name}: mean |f32 - plugin| {plain_error.mean():.3g} "
              f"(max {plain_error.max():.3g}, {np.mean(plain_error == 0):.1%} exact); mean |emulated - plugin| "
              f"{emulated_error.mean():.3g} (max {emulated_error.max():.3g}, {np.mean(emulated_error == 0):.1%} exact)")
        assert plain_error.mean() > 0, "the plugin did compute in a lower precision"
        # the last ulp still differs where the device sums in another order or fuses otherwise
        assert emulated_error.mean() < 0.7 * plain_error.mean(), name


def test_compare_layer_by_layer_at_f16_leaves_the_kept_layers_to_the_whole_model(tmp_path):
    """Run alone at f16 on the target, the kept Exp loses what keeps it: not compared, with why."""
    pytest.importorskip("openvino")
    xml = softmax_then_matmul(tmp_path)
    np.savez(tmp_path / "inputs.npz", x=np.random.default_rng(6).standard_normal((2, 8)).astype(np.float32) * 3)
    args = ("compare", str(xml), "--inputs", str(tmp_path / "inputs.npz"), "--target-precision", "f16",
            "--reference-precision", "f16", "--json")
    out = cli(*args)
    report = json.loads(out.stdout)
    records = {r["name"]: r for r in report["records"]}
    if "CPU at f32" in report["target"]:  # no f16 arithmetic here: the plugin runs f32, nothing is kept
        cpu_note("OpenVINO's CPU plugin runs f32 when asked for f16 here: checked that compare judges every layer "
                 "at f32 and names the precision it ran")
        assert "asked for f16" in report["target"] and all(r["status"] == "passed" for r in records.values())
        return
    kept = kept_names(xml, "f16") & set(records)
    assert kept and all(records[name]["status"] == "not compared" for name in kept)
    assert "the whole model's comparison judges it" in records["exp"]["reason"]
    assert any(r["status"] in ("passed", "failed") for r in records.values())  # the others are judged

