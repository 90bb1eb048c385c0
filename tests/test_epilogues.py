"""Chains fused into one step of a plain run (`runtime/epilogues.py`): a convolution with its bias
Add and activation, per-channel scales, biases and activations after any layer, residual sums
and their activation. The values are the layers' own to the bit, on the first call (the
layers' kernels in turn) and after it (numba's pass), and only the chains it may fuse are fused."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

import irscatter
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer, Port
from irscatter.ir.writer import IRWriter
from irscatter.ops.common import accel, threads
from irscatter.runtime import epilogues
from irscatter.runtime.epilogues import _Affine, _Epilogue

EDGES = [0.0, -0.0, 1.0, -1.0, -3.0, 3.0, -2.9999998, 6.0, -6.0, 1e-40, -1e-40, 1e30, -1e30, np.inf, -np.inf, np.nan]
ACTIVATIONS = [None, ("Relu", "opset1"), ("HSwish", "opset4"), ("HSigmoid", "opset5"), ("Swish", "opset4")]


@pytest.fixture(autouse=True)
def _small_steps_load_the_pass(monkeypatch):
    """The models here are small: let their second calls load the compiled pass as a large
    step's would (a small step alone never loads it: `test_a_small_step_does_not_load_the_pass`)."""
    monkeypatch.setattr(accel, "LOAD_ELEMENTS", 0)


def _layer(n: int, type_: str, version: str, inputs: int, attrs: dict[str, str] | None = None) -> Layer:
    return Layer(id=n, name=f"{type_.lower()}_{n}", type=type_, version=version, attrs=attrs or {},
                 inputs=[Port(id=i) for i in range(inputs)], outputs=[Port(id=inputs)])


def _model(folder: Path, activation: tuple[str, str] | None, dtype=np.float32, bias_shape=(1, 6, 1, 1),
           bias_first: bool = False, conv_also_out: bool = False, add_also_out: bool = False, group: bool = False,
           x_shape=(2, 4, 9, 7), kernel: int = 3) -> Path:
    etype = ElementType.from_dtype(np.dtype(dtype))
    rng = np.random.default_rng(3)
    writer = IRWriter("epilogue")
    x = writer.parameter("x", etype, x_shape, ("x",))
    out_shape = (x_shape[0], 6, x_shape[2] - kernel + 1, x_shape[3] - kernel + 1)
    attrs = {"strides": "1,1", "dilations": "1,1", "pads_begin": "0,0", "pads_end": "0,0", "auto_pad": "explicit"}
    if group:
        w_shape: tuple[int, ...] = (2, 3, x_shape[1] // 2, kernel, kernel)
        conv = writer.copy(_layer(1, "GroupConvolution", "opset1", 2, attrs),
                           [x, writer.const("w", rng.standard_normal(w_shape).astype(dtype))],
                           [(etype, x_shape), (etype, w_shape)], [(etype, out_shape)])[0]
    else:
        w_shape = (6, x_shape[1], kernel, kernel)
        conv = writer.copy(_layer(1, "Convolution", "opset1", 2, attrs),
                           [x, writer.const("w", rng.standard_normal(w_shape).astype(dtype))],
                           [(etype, x_shape), (etype, w_shape)], [(etype, out_shape)])[0]
    bias = writer.const("b", (rng.standard_normal(bias_shape) * 4).astype(dtype))
    pair = [bias, conv] if bias_first else [conv, bias]
    types = [(etype, bias_shape), (etype, out_shape)] if bias_first else [(etype, out_shape), (etype, bias_shape)]
    out = writer.copy(_layer(2, "Add", "opset1", 2, {"auto_broadcast": "numpy"}), pair, types, [(etype, out_shape)])[0]
    if add_also_out:
        writer.result("sum", out, etype, out_shape)
    if activation is not None:
        out = writer.copy(_layer(3, activation[0], activation[1], 1), [out], [(etype, out_shape)],
                          [(etype, out_shape)])[0]
    if conv_also_out:
        writer.result("conv", conv, etype, out_shape)
    writer.result("y", out, etype, out_shape)
    return writer.save(folder / "model.xml")


def _feeds(dtype=np.float32, shape=(2, 4, 9, 7)) -> dict[str, np.ndarray]:
    x = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[:len(EDGES)] = EDGES[:flat.size]  # edge values reach the outputs through the convolution's windows
    return {"x": x}


def _fused(compiled, kind=_Epilogue) -> int:
    return sum(isinstance(step.compute, kind) for step in compiled.plan.fold.replaced.values())


def _bits(a: np.ndarray) -> np.ndarray:
    """Bits, every NaN as one value (a NaN's payload depends on the order of its operands)."""
    bits = a.view(f"u{a.dtype.itemsize}").copy()
    bits[np.isnan(a)] = 0
    return bits


def _same_as_layers(compiled, feeds) -> None:
    watched = compiled.run(feeds, timings=[])  # a run that watches its layers runs them as written
    for _ in range(3):  # the first call takes the layers' kernels, the later ones the compiled pass
        before = {k: v.copy() for k, v in feeds.items()}
        got = compiled.run(feeds)
        for name in watched:
            np.testing.assert_array_equal(_bits(got[name]), _bits(watched[name]))
        for k in feeds:
            np.testing.assert_array_equal(feeds[k], before[k])  # the feeds are not written


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: a[0] if a else "none")
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("backend", ["auto", "numpy"])
def test_fused_values_are_the_layers(tmp_path, activation, dtype, backend):
    compiled = irscatter.compile_model(_model(tmp_path, activation, dtype))
    assert _fused(compiled) == 1
    assert len(compiled.plan.run_steps) == 1
    with accel.use(backend):
        _same_as_layers(compiled, _feeds(dtype))
    if backend == "auto" and accel.available():
        assert "irscatter.ops.elementwise.bias_kernels" in sys.modules  # the compiled pass ran


@pytest.mark.parametrize("variant", [dict(bias_shape=(6, 1, 1)), dict(bias_first=True), dict(group=True),
                                     dict(x_shape=(1, 4, 40, 40)), dict(x_shape=(3, 4, 30, 30))],
                         ids=["rank-3-bias", "bias-first", "group", "one-sample-split", "samples-split"])
def test_fused_forms(tmp_path, variant):
    x_shape = variant.get("x_shape", (2, 4, 9, 7))
    compiled = irscatter.compile_model(_model(tmp_path, ("HSwish", "opset4"), **variant))
    assert _fused(compiled) == 1
    with accel.use("auto"):
        _same_as_layers(compiled, _feeds(shape=x_shape))


@pytest.mark.parametrize("variant", [
    dict(kernel=1, x_shape=(1, 4, 9, 7)),  # 1x1: parts of the positions
    dict(kernel=1, x_shape=(3, 4, 9, 7)),  # 1x1: parts of the samples
    dict(kernel=1, x_shape=(2, 4, 9, 7)),  # 1x1: fewer samples than parts, parts of the positions of each
    dict(x_shape=(2, 4, 9, 7)),  # im2col, wide rows
    dict(x_shape=(1, 4, 5, 40)),  # im2col, blocks of rows
    dict(x_shape=(1, 4, 4, 3)),  # im2col, the filters outweigh the patches: parts of the channels
    dict(group=True),  # groups: parts of the groups
], ids=["pointwise-positions", "pointwise-samples", "pointwise-both", "wide-rows", "rows", "channels", "groups"])
@pytest.mark.parametrize("activation", ACTIVATIONS, ids=lambda a: a[0] if a else "none")
def test_a_convolution_finished_block_by_block(tmp_path, monkeypatch, variant, activation):
    """Every layer split into parts: once the compiled pass is loaded, each part biases and
    activates the blocks of the output it writes, to the layers' bits."""
    if not accel.available():
        pytest.skip("numba is not installed")
    monkeypatch.setattr(threads, "SPLIT_WORK", 0)
    monkeypatch.setattr(threads, "CORES", 3)  # (whatever this machine has: three parts)
    blocks = []
    block_pass = epilogues._BlockPass.__call__
    monkeypatch.setattr(epilogues._BlockPass, "__call__", lambda self, *a: blocks.append(a[1:]) or block_pass(self, *a))
    compiled = irscatter.compile_model(_model(tmp_path, activation, **variant))
    assert _fused(compiled) == 1
    with accel.use("auto"):
        _same_as_layers(compiled, _feeds(shape=variant.get("x_shape", (2, 4, 9, 7))))
    assert len(blocks) > 1


@pytest.mark.parametrize("activation", [1, 2, 3, 4], ids=["Relu", "HSwish", "HSigmoid", "Swish"])
def test_the_split_pass_is_the_whole_pass(activation):
    """The pass over ranges of rows (a part's, from any row: a channel's Consts are its row's
    index modulo the channels) gives what one pass over all rows gives, and in place what it
    gives into an array of its own."""
    if not accel.available():
        pytest.skip("numba is not installed")
    from irscatter.runtime.epilogues import _rows

    rng = np.random.default_rng(0)
    scale = rng.standard_normal(8).astype(np.float32) if activation != 4 else np.ones(8, np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    constants = (np.float32(0), np.float32(3), np.float32(6))
    for width in (5000, 7):  # rows longer than Swish's block, and several rows a block
        out = rng.standard_normal((3 * 8, width)).astype(np.float32)
        out[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
        whole = out.copy()
        _rows(whole, whole, 0, scale=scale, bias=bias, activation=activation, constants=constants, in_place=True)
        parts = out.copy()
        for lo, hi in ((0, 5), (5, 13), (13, 24)):
            _rows(parts[lo:hi], parts[lo:hi], lo, scale=scale, bias=bias, activation=activation, constants=constants,
                  in_place=True)
        np.testing.assert_array_equal(parts, whole)
        if activation != 4:  # (Swish goes in place only, and not by blocks)
            apart = np.empty_like(out)
            _rows(out, apart, 0, scale=scale, bias=bias, activation=activation, constants=constants, in_place=False)
            assert apart.tobytes() == whole.tobytes()


@pytest.mark.parametrize("activation", [1, 2, 3, 4], ids=["Relu", "HSwish", "HSigmoid", "Swish"])
def test_the_pass_by_blocks_is_the_whole_pass(activation, monkeypatch):
    """The bias and activation over blocks of a larger array given flat, as a convolution's
    parts hand them over (`_BlockPass`: columns lo..hi of rows r0..r1, from any row; Swish in
    blocks of its exponentials), give what one pass over all rows gives."""
    if not accel.available():
        pytest.skip("numba is not installed")
    from irscatter.runtime.epilogues import _BlockPass, _rows

    monkeypatch.setattr(epilogues, "BLOCK", 64)  # several blocks of exponentials within a part's block
    rng = np.random.default_rng(1)
    bias = rng.standard_normal(8).astype(np.float32)
    constants = (np.float32(0), np.float32(3), np.float32(6))
    for width in (300, 7):
        out = (rng.standard_normal((3 * 8, width)) * 4).astype(np.float32)
        out[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
        whole = out.copy()
        _rows(whole, whole, 0, scale=np.ones(8, np.float32), bias=bias, activation=activation, constants=constants,
              in_place=True)
        blocks = out.copy()
        flat, finish = blocks.reshape(-1), _BlockPass(bias, activation, blocks.dtype)
        for (r0, r1), (lo, hi) in itertools.product(((0, 5), (5, 13), (13, 24)), ((0, 1), (1, width // 2),
                                                                                   (width // 2, width))):
            finish(flat, r0 * width + lo, width, r1 - r0, hi - lo, r0)
        assert _bits(blocks).tobytes() == _bits(whole).tobytes()


@pytest.mark.parametrize(("variant", "fused", "steps"), [
    (dict(conv_also_out=True), 0, 2),  # the convolution's output is a Result too: the Add and Relu alone
    (dict(add_also_out=True), 1, 2),  # the sum is a Result: the Add is fused, the activation is not
    (dict(bias_shape=(1, 6, 7, 5)), 0, 3),  # not a bias of the channels
    (dict(bias_shape=(1, 1, 1, 1)), 0, 3),  # one value for all: not the channel axis's
])
def test_what_is_not_fused(tmp_path, variant, fused, steps):
    compiled = irscatter.compile_model(_model(tmp_path, ("Relu", "opset1"), **variant))
    assert _fused(compiled) == fused
    assert len(compiled.plan.run_steps) == steps
    with accel.use("auto"):
        _same_as_layers(compiled, _feeds())


def test_a_size_zero_batch(tmp_path):
    xml = _model(tmp_path, ("Relu", "opset1"), x_shape=(0, 4, 9, 7))
    compiled = irscatter.compile_model(xml)
    with accel.use("auto"):
        for _ in range(2):
            assert compiled.run(_feeds(shape=(0, 4, 9, 7)))["y"].shape == (0, 6, 7, 5)


def _affine_model(folder: Path, shape, const_shape, chain, dtype=np.float32, const_first=False) -> Path:
    """x -> each of `chain` ("Multiply", "Add" by a Const of `const_shape`, or an activation) -> y."""
    etype = ElementType.from_dtype(np.dtype(dtype))
    rng = np.random.default_rng(4)
    writer = IRWriter("affine")
    value = writer.parameter("x", etype, shape, ("x",))
    for n, kind in enumerate(chain, start=1):
        if kind in ("Multiply", "Add"):
            const = writer.const(f"c{n}", (rng.standard_normal(const_shape) * 3).astype(dtype))
            pair = [const, value] if const_first else [value, const]
            types = [(etype, const_shape), (etype, shape)] if const_first else [(etype, shape), (etype, const_shape)]
            value = writer.copy(_layer(n, kind, "opset1", 2, {"auto_broadcast": "numpy"}), pair, types,
                                [(etype, shape)])[0]
        else:
            version = {"Relu": "opset1", "HSwish": "opset4", "HSigmoid": "opset5"}[kind]
            value = writer.copy(_layer(n, kind, version, 1), [value], [(etype, shape)], [(etype, shape)])[0]
    writer.result("y", value, etype, shape)
    return writer.save(folder / "model.xml")


@pytest.mark.parametrize(("shape", "const_shape", "chain", "const_first"), [
    ((2, 6, 5, 7), (1, 6, 1, 1), ("Multiply", "Add", "Relu"), False),  # a batch normalization, then Relu
    ((2, 6, 5, 7), (6, 1, 1), ("Multiply", "Add"), True),
    ((3, 5, 8), (8,), ("Multiply", "Add"), False),  # channels last: a normalization's scale and shift
    ((3, 5, 8), (1, 1, 8), ("Add", "HSwish"), False),
    ((4, 9), (9,), ("Multiply", "HSigmoid"), True),
    ((1, 64, 40, 40), (1, 64, 1, 1), ("Multiply", "Add", "Relu"), False),  # large enough to split
], ids=["bn-relu", "bn-const-first", "channels-last", "bias-hswish", "scale-hsigmoid", "split"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_affine_chains_are_the_layers(tmp_path, shape, const_shape, chain, const_first, dtype):
    compiled = irscatter.compile_model(_affine_model(tmp_path, shape, const_shape, chain, dtype, const_first))
    assert _fused(compiled, _Affine) == 1
    assert len(compiled.plan.run_steps) == 1
    with accel.use("auto"):
        _same_as_layers(compiled, _feeds(dtype, shape))


@pytest.mark.parametrize(("const_shape", "chain"), [
    ((1, 6, 5, 1), ("Multiply", "Add")),  # the Const varies along two axes
    ((1, 6, 1, 1), ("Add",)),  # one layer: nothing to fuse
    ((1, 6, 1, 1), ("Add", "Multiply")),  # a bias then a scale: not the order the pass takes
])
def test_affine_chains_not_fused(tmp_path, const_shape, chain):
    compiled = irscatter.compile_model(_affine_model(tmp_path, (2, 6, 5, 7), const_shape, chain))
    assert _fused(compiled, _Affine) == 0
    with accel.use("auto"):
        _same_as_layers(compiled, _feeds(shape=(2, 6, 5, 7)))


def test_a_small_step_does_not_load_the_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(accel, "LOAD_ELEMENTS", 1 << 16)
    monkeypatch.delitem(sys.modules, epilogues.KERNELS, raising=False)
    monkeypatch.setattr(accel, "warm", lambda: False)  # (as in a process no compiled loop has run in)
    compiled = irscatter.compile_model(_model(tmp_path, ("Relu", "opset1")))
    with accel.use("auto"):
        _same_as_layers(compiled, _feeds())
    assert epilogues.KERNELS not in sys.modules


@pytest.mark.parametrize(("x_shape", "bias_shape", "activation"), [
    ((2, 5, 8), (6,), ("Relu", "opset1")),
    ((5, 8), (1, 6), None),
    ((3, 2, 5, 8), (1, 1, 1, 6), ("HSigmoid", "opset5")),
    ((2, 70, 8), (1, 1, 6), None),
    ((400, 8), (6,), None),
], ids=["3d-relu", "2d", "4d-hsigmoid", "3d", "rows"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("split", [False, True], ids=["one-part", "parts"])
def test_a_products_bias(tmp_path, monkeypatch, x_shape, bias_shape, activation, dtype, split):
    """A MatMul and its bias Add are one step, each part of the product adding the bias to the
    block it wrote; where a Relu or HSigmoid follows, the Add goes with it instead, as a chain
    of its own. The bits are the layers'."""
    if split:  # every product in parts: of the batch, of rows or of columns
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(threads, "CORES", 3)
        monkeypatch.setattr(threads, "_policy", "split")
    etype = ElementType.from_dtype(np.dtype(dtype))
    rng = np.random.default_rng(6)
    writer = IRWriter("linear")
    x = writer.parameter("x", etype, x_shape, ("x",))
    out_shape = (*x_shape[:-1], 6)
    w = writer.const("w", rng.standard_normal((6, 8)).astype(dtype))
    value = writer.copy(_layer(1, "MatMul", "opset1", 2, {"transpose_a": "false", "transpose_b": "true"}), [x, w],
                        [(etype, x_shape), (etype, (6, 8))], [(etype, out_shape)])[0]
    b = writer.const("b", (rng.standard_normal(bias_shape) * 3).astype(dtype))
    value = writer.copy(_layer(2, "Add", "opset1", 2, {"auto_broadcast": "numpy"}), [value, b],
                        [(etype, out_shape), (etype, bias_shape)], [(etype, out_shape)])[0]
    if activation is not None:
        value = writer.copy(_layer(3, *activation, 1), [value], [(etype, out_shape)], [(etype, out_shape)])[0]
    writer.result("y", value, etype, out_shape)
    compiled = irscatter.compile_model(writer.save(tmp_path / "model.xml"))
    assert _fused(compiled) == 0
    assert _fused(compiled, _Affine) == (activation is not None)
    assert _fused(compiled, epilogues._ProductBias) == (activation is None)
    assert len(compiled.plan.run_steps) == 2 if activation is not None else 1
    with accel.use("auto"):
        _same_as_layers(compiled, _feeds(dtype, x_shape))


def _sum_model(folder: Path, a_shape, b_shape, activation, dtype=np.float32) -> Path:
    etype = ElementType.from_dtype(np.dtype(dtype))
    writer = IRWriter("residual")
    a = writer.parameter("a", etype, a_shape, ("a",))
    b = writer.parameter("b", etype, b_shape, ("b",))
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    value = writer.copy(_layer(1, "Add", "opset1", 2, {"auto_broadcast": "numpy"}), [a, b],
                        [(etype, a_shape), (etype, b_shape)], [(etype, out_shape)])[0]
    value = writer.copy(_layer(2, *activation, 1), [value], [(etype, out_shape)], [(etype, out_shape)])[0]
    writer.result("y", value, etype, out_shape)
    return writer.save(folder / "model.xml")


@pytest.mark.parametrize("activation", [("Relu", "opset1"), ("HSwish", "opset4"), ("HSigmoid", "opset5")],
                         ids=lambda a: a[0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape", [(2, 6, 5, 7), (1, 64, 40, 40), (0, 3)], ids=["small", "split", "empty"])
def test_a_residual_sum_and_its_activation(tmp_path, activation, dtype, shape):
    compiled = irscatter.compile_model(_sum_model(tmp_path, shape, shape, activation, dtype))
    assert _fused(compiled, epilogues._Sum) == 1 and len(compiled.plan.run_steps) == 1
    rng = np.random.default_rng(8)
    feeds = {"a": _feeds(dtype, shape)["x"], "b": rng.standard_normal(shape).astype(dtype)}
    with accel.use("auto"):
        _same_as_layers(compiled, feeds)


def test_a_broadcasting_sum_is_not_fused(tmp_path):
    compiled = irscatter.compile_model(_sum_model(tmp_path, (2, 6, 5, 7), (1, 6, 1, 7), ("Relu", "opset1")))
    assert _fused(compiled, epilogues._Sum) == 0
    rng = np.random.default_rng(9)
    with accel.use("auto"):
        _same_as_layers(compiled, {"a": rng.standard_normal((2, 6, 5, 7)).astype(np.float32),
                                   "b": rng.standard_normal((1, 6, 1, 7)).astype(np.float32)})
