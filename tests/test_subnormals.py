"""Products whose operand holds subnormal numbers, made on it scaled by a power of two
(irscatter/ops/common/subnormals.py), and the MatMuls the plan marks for it (runtime/plan.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import irscatter
from irscatter.ir.element_types import ElementType
from irscatter.ir.writer import IRWriter
from irscatter.ops.common import products, subnormals
from irscatter.ops.matrix.mat_mul import MatMul

F32 = np.dtype(np.float32)


def _masked_weights(shape, dtype=np.float32, seed=0) -> np.ndarray:
    """Softmax of scores with a block masked by -100, as Swin's shifted windows mask them: the
    masked weights are near e^-100, subnormal in f32."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(shape)
    scores[..., shape[-1] // 2:] -= 100.0
    if np.dtype(dtype) == np.float64:
        scores[..., shape[-1] // 2:] -= 620.0  # about e^-720: subnormal in f64
    scores = scores.astype(dtype)
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (shifted / shifted.sum(axis=-1, keepdims=True)).astype(dtype)


def _has_subnormals(x: np.ndarray) -> bool:
    return bool(np.any((x != 0) & (np.abs(x) < np.finfo(x.dtype).smallest_normal)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_magnitudes(dtype):
    tiny = np.finfo(dtype).smallest_normal
    x = np.array([[0.0, -0.0, 1.5], [-3.0, tiny, 2.0]], dtype)
    assert subnormals.magnitudes(x) == (False, 3.0)
    x[0, 0] = -tiny / 8  # a negative subnormal
    assert subnormals.magnitudes(x) == (True, 3.0)
    x[0, 0] = np.nextafter(dtype(0), dtype(1))  # the smallest
    assert subnormals.magnitudes(x) == (True, 3.0)
    assert subnormals.magnitudes(x[:, 1:].T) == (False, 2.0)  # a strided view
    for bad in (np.inf, -np.inf, np.nan):
        y = x.copy()
        y[1, 2] = bad
        assert subnormals.magnitudes(y) == (False, np.inf)


def test_the_shift():
    a = _masked_weights((3, 49, 49))
    v = np.random.default_rng(1).standard_normal((3, 49, 32)).astype(np.float32)
    assert subnormals.shift(a, v, 49) == subnormals.SHIFT[F32]
    # no subnormal, or an operand of another type: nothing to scale
    assert subnormals.shift(v, v.swapaxes(-1, -2), 32) is None
    assert subnormals.shift(a, v.astype(np.float64), 49) is None
    assert subnormals.shift(a.astype(np.float16), v.astype(np.float16), 49) is None
    assert subnormals.shift(a[:0], v[:0], 49) is None
    # a large b leaves less room: the partial sums must stay finite
    large = v * np.float32(2.0 ** 80)
    k = subnormals.shift(a, large, 49)
    assert k is not None and np.finfo(np.float32).nmant < k < subnormals.SHIFT[F32]
    assert np.isfinite(np.float32(2.0 ** k) * np.float32(49) * np.abs(large).max())
    # too little room to make every subnormal normal, or a non-finite operand: as it is
    assert subnormals.shift(a, v * np.float32(2.0 ** 100), 49) is None
    assert subnormals.shift(a, np.where(v > 2, np.inf, v).astype(np.float32), 49) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("which", [0, 1])
def test_the_bits_of_the_product_as_it_is(dtype, which):
    """Attention weights over masked positions times values: the same bits as the product made
    on the subnormals themselves (every partial sum here is normal)."""
    weights = _masked_weights((4, 3, 49, 49), dtype)
    assert _has_subnormals(weights)
    values = np.random.default_rng(2).standard_normal((4, 3, 49, 32)).astype(dtype)
    kept = weights.copy(), values.copy()
    if which == 0:
        a, b = weights, values
    else:  # values^T @ weights^T
        a, b = np.swapaxes(values, -1, -2), np.swapaxes(weights, -1, -2)
    got = subnormals.scaled_product(a, b, which, products.matmul)
    want = products.matmul(a, b)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(weights, kept[0]) and np.array_equal(values, kept[1])  # inputs unchanged


def test_a_subnormal_result_keeps_its_bits():
    """Where the sums themselves are subnormal, the scaled product rounds once, to the float
    nearest the exact sum (the product as it is rounds each term to the subnormal grid)."""
    step = np.float32(np.nextafter(np.float32(0), np.float32(1)))  # 2^-149
    a = np.array([[3 * step, 5 * step, 7 * step]], np.float32)
    b = np.array([[0.75, -0.5], [0.75, 0.25], [0.75, 0.5]], np.float32)
    got = subnormals.scaled_product(a, b, 0, products.matmul)
    exact = a.astype(np.float64) @ b.astype(np.float64)  # exact: few bits each
    assert np.array_equal(got, exact.astype(np.float32))
    assert got[0, 0] == 11 * step and got[0, 1] == 3 * step  # 11.25 and 3.25 steps, rounded once


def test_non_finite_operands_are_multiplied_as_they_are():
    weights = _masked_weights((2, 49, 49))
    values = np.random.default_rng(3).standard_normal((2, 49, 32)).astype(np.float32)
    values[0, 4, 5] = np.inf
    values[1, 7, 1] = np.nan
    with np.errstate(invalid="ignore"):
        got = subnormals.scaled_product(weights, values, 0, products.matmul)
        want = products.matmul(weights, values)
    assert np.array_equal(got, want, equal_nan=True)


# --- the plan marks the MatMuls a Softmax feeds -------------------------------------------------------


def _attention_model(folder: Path) -> Path:
    """Softmax -> Reshape -> MatMul(weights, values); Softmax -> Transpose -> MatMul(values^T,
    weights^T) with transpose_a; and a MatMul of two Parameters, as outputs."""
    f32 = ElementType.f32
    writer = IRWriter("attention")
    shape, flat = (4, 3, 49, 49), (12, 49, 49)
    scores = writer.parameter("scores", f32, shape, ("scores",))
    values = writer.parameter("values", f32, (12, 49, 32), ("values",))
    weights = writer.layer("Softmax", "opset8", [scores], [(f32, shape)], [(f32, shape)], name="softmax",
                           attrs={"axis": "-1"})[0]
    target = writer.const("flat", np.array(flat, np.int64))
    reshaped = writer.layer("Reshape", "opset1", [weights, target], [(f32, shape), (ElementType.i64, (3,))],
                            [(f32, flat)], name="reshape", attrs={"special_zero": "false"})[0]
    first = writer.layer("MatMul", "opset1", [reshaped, values], [(f32, flat), (f32, (12, 49, 32))],
                         [(f32, (12, 49, 32))], name="weights_values",
                         attrs={"transpose_a": "false", "transpose_b": "false"})[0]
    order = writer.const("order", np.array([0, 1, 3, 2], np.int64))
    turned = writer.layer("Transpose", "opset1", [weights, order], [(f32, shape), (ElementType.i64, (4,))],
                          [(f32, shape)], name="transpose")[0]
    values4 = writer.parameter("values4", f32, (4, 3, 49, 32), ("values4",))
    second = writer.layer("MatMul", "opset1", [values4, turned], [(f32, (4, 3, 49, 32)), (f32, shape)],
                          [(f32, (4, 3, 32, 49))], name="values_weights",
                          attrs={"transpose_a": "true", "transpose_b": "false"})[0]
    plain = writer.layer("MatMul", "opset1", [values, values], [(f32, (12, 49, 32)), (f32, (12, 49, 32))],
                         [(f32, (12, 49, 49))], name="plain", attrs={"transpose_a": "false", "transpose_b": "true"})[0]
    writer.result("first", first, f32, (12, 49, 32))
    writer.result("second", second, f32, (4, 3, 32, 49))
    writer.result("plain", plain, f32, (12, 49, 49))
    return writer.save(folder / "model.xml")


def _marks(compiled) -> dict[str, frozenset[int]]:
    steps = [(step.layer.name, compiled.graph.op(step.layer.id)) for step in compiled.plan.steps]
    return {name: op.subnormal_inputs for name, op in steps if isinstance(op, MatMul)}


def test_the_matmuls_a_softmax_feeds_are_marked(tmp_path):
    compiled = irscatter.compile_model(_attention_model(tmp_path))
    assert _marks(compiled) == {"weights_values": {0}, "values_weights": {1}, "plain": frozenset()}


def test_a_marked_model_runs_with_the_bits_of_an_unmarked_one(tmp_path, monkeypatch):
    rng = np.random.default_rng(4)
    scores = rng.standard_normal((4, 3, 49, 49)).astype(np.float32)
    scores[..., 30:] -= 100  # masked: subnormal weights
    feeds = {"scores": scores, "values": rng.standard_normal((12, 49, 32)).astype(np.float32),
             "values4": rng.standard_normal((4, 3, 49, 32)).astype(np.float32)}
    path = _attention_model(tmp_path)
    marked = irscatter.compile_model(path)
    monkeypatch.setattr("irscatter.runtime.plan._mark_softmax_products", lambda steps, ops, producers: None)
    unmarked = irscatter.compile_model(path)
    assert all(not inputs for inputs in _marks(unmarked).values())
    seen = []
    marked.run(feeds, hook=lambda layer, inputs, outputs: seen.append(_has_subnormals(np.asarray(outputs[0])))
               if layer.type == "Softmax" else None)
    assert seen == [True]
    got, want = marked.run(feeds), unmarked.run(feeds)
    for name in ("first", "second", "plain"):
        assert np.array_equal(got[name], want[name]), name


def test_a_marked_product_with_a_bias():
    """MatMul.biased on a marked input: the scaled product, then the bias added as an Add would."""
    op = MatMul.__new__(MatMul)
    object.__setattr__(op, "attrs", MatMul.Attrs())
    op.subnormal_inputs = frozenset({0})
    weights = _masked_weights((49, 49))
    values = np.random.default_rng(5).standard_normal((49, 32)).astype(np.float32)
    bias = np.random.default_rng(6).standard_normal(32).astype(np.float32)
    assert np.array_equal(op.biased(weights, values, bias), products.matmul(weights, values) + bias)
