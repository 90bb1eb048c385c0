"""Generate the sample models under `models/` with the OpenVINO Python API.

Each model directory holds `model.xml` + `model.bin` as written by `ov.save_model` (or by
the Serialize pass for IR v10), `inputs.npz` drawn with a fixed seed, and `expected.npz`
computed by OpenVINO's CPU plugin at f32 inference precision. Run from the repository root:

    python tools/make_models.py [--out models] [NAME ...]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset15 as ops
from openvino import op, passes


def _named(node, name: str):
    node.output(0).get_tensor().set_names({name})
    return node


def affine_chain() -> tuple[ov.Model, dict[str, np.ndarray]]:
    """y = (x * w + b) / 4, and the same value converted to f16."""
    x = ops.parameter([2, 4], ov.Type.f32, name="x")
    w = ops.constant(np.array([0.5, -1.0, 2.0, 3.0], np.float32))
    b = ops.constant(np.arange(8, dtype=np.float32).reshape(2, 4))
    y = _named(ops.divide(ops.add(ops.multiply(x, w), b), ops.constant(np.float32(4.0))), "y")
    y16 = _named(ops.convert(y, "f16"), "y_f16")
    model = ov.Model([ops.result(y), ops.result(y16)], [x], "affine_chain")
    rng = np.random.default_rng(1)
    return model, {"x": rng.standard_normal((2, 4)).astype(np.float32)}


def mixed_types_v10() -> tuple[ov.Model, dict[str, np.ndarray]]:
    """Integer arithmetic feeding a float multiply, written as IR v10."""
    a = ops.parameter([3], ov.Type.i32, name="a")
    s = ops.parameter([2, 3], ov.Type.f32, name="scale")
    t = ops.subtract(ops.add(a, ops.constant(np.array([10, 20, 30], np.int32))), ops.constant(np.int32(7)))
    out = _named(ops.multiply(ops.convert(t, "f32"), s), "scaled")
    model = ov.Model([ops.result(out)], [a, s], "mixed_types_v10")
    rng = np.random.default_rng(2)
    return model, {"a": rng.integers(-50, 50, 3).astype(np.int32), "scale": rng.standard_normal((2, 3)).astype(np.float32)}


def dynamic_batch() -> tuple[ov.Model, dict[str, np.ndarray]]:
    """A batch dimension left dynamic: `x` is [?, 3], `bias` is [1..8, 1]."""
    x = ops.parameter(ov.PartialShape([-1, 3]), ov.Type.f32, name="x")
    bias = ops.parameter(ov.PartialShape([ov.Dimension(1, 8), 1]), ov.Type.f32, name="bias")
    y = _named(ops.add(ops.multiply(x, ops.constant(np.array([1.0, 2.0, 3.0], np.float32))), bias), "y")
    model = ov.Model([ops.result(y)], [x, bias], "dynamic_batch")
    rng = np.random.default_rng(3)
    return model, {"x": rng.standard_normal((5, 3)).astype(np.float32), "bias": rng.standard_normal((5, 1)).astype(np.float32)}


def paged_kv_cache() -> tuple[ov.Model, dict[str, np.ndarray]]:
    """A paged KV-cache write: new key/value rows land at flat slots of a block-paged cache.

    cache [blocks, block_size, heads, head_dim], new_kv [tokens, heads, head_dim],
    slot_mapping [tokens] (slot = block * block_size + offset). The block size is read from
    the cache's shape, the slot is split with Divide/FloorMod, and ScatterNDUpdate-15 writes.
    A second output reads the written rows back with GatherND-8.
    """
    cache = ops.parameter([8, 4, 2, 8], ov.Type.f32, name="cache")
    new_kv = ops.parameter([5, 2, 8], ov.Type.f32, name="new_kv")
    slots = ops.parameter([5], ov.Type.i64, name="slot_mapping")
    block_size = ops.gather(ops.shape_of(cache), ops.constant(np.int64(1)), ops.constant(np.int64(0)))
    block = ops.divide(slots, block_size)
    offset = ops.floor_mod(slots, block_size)
    minus_one = ops.constant(np.array([-1], np.int64))
    indices = ops.concat([ops.unsqueeze(block, minus_one), ops.unsqueeze(offset, minus_one)], -1)
    updated = _named(ops.scatter_nd_update(cache, indices, new_kv, "none"), "cache_out")
    read_back = _named(ops.gather_nd(updated, indices), "written")
    model = ov.Model([ops.result(updated), ops.result(read_back)], [cache, new_kv, slots], "paged_kv_cache")
    rng = np.random.default_rng(4)
    feeds = {
        "cache": rng.standard_normal((8, 4, 2, 8)).astype(np.float32),
        "new_kv": rng.standard_normal((5, 2, 8)).astype(np.float32),
        "slot_mapping": rng.permutation(32)[:5].astype(np.int64),
    }
    return model, feeds


def transformer_block() -> tuple[ov.Model, dict[str, np.ndarray]]:
    """One pre-norm transformer block as converters emit it: an MVN layer norm, Q/K/V MatMuls,
    Einsum attention with Softmax-8, an output projection and residual; then a layer norm spelt
    ReduceMean/Sqrt/Divide, a Gelu MLP and a second residual. x is [batch 2, tokens 8, hidden 16]
    with 2 heads of 8."""
    rng = np.random.default_rng(5)
    b, t, hidden, heads = 2, 8, 16, 2
    d = hidden // heads

    def weight(*shape):
        return ops.constant((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    def i64(*values):
        return ops.constant(np.array(values, np.int64))

    x = ops.parameter([b, t, hidden], ov.Type.f32, name="x")
    gamma = ops.constant((1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    beta = ops.constant((0.1 * rng.standard_normal(hidden)).astype(np.float32))
    ln1 = ops.add(ops.multiply(ops.mvn(x, i64(-1), True, 1e-5, "inside_sqrt"), gamma), beta)

    def heads_first(y):  # [b, t, hidden] -> [b, heads, t, d]
        return ops.transpose(ops.reshape(y, i64(b, t, heads, d), False), i64(0, 2, 1, 3))

    q, k, v = (heads_first(ops.add(ops.matmul(ln1, weight(hidden, hidden), False, False), weight(hidden)))
               for _ in range(3))
    scores = ops.multiply(ops.einsum([q, k], "bhqd,bhkd->bhqk"), ops.constant(np.float32(1 / np.sqrt(d))))
    attention = ops.softmax(scores, -1)
    context = ops.einsum([attention, v], "bhqk,bhkd->bhqd")
    merged = ops.reshape(ops.transpose(context, i64(0, 2, 1, 3)), i64(b, t, hidden), False)
    h = ops.add(x, ops.add(ops.matmul(merged, weight(hidden, hidden), False, False), weight(hidden)))
    mean = ops.reduce_mean(h, i64(-1), True)
    centred = ops.subtract(h, mean)
    variance = ops.reduce_mean(ops.multiply(centred, centred), i64(-1), True)
    ln2 = ops.divide(centred, ops.sqrt(ops.add(variance, ops.constant(np.float32(1e-5)))))
    up = ops.gelu(ops.add(ops.matmul(ln2, weight(hidden, 4 * hidden), False, False), weight(4 * hidden)), "erf")
    y = _named(ops.add(h, ops.matmul(up, weight(4 * hidden, hidden), False, False)), "y")
    model = ov.Model([ops.result(y)], [x], "transformer_block")
    return model, {"x": rng.standard_normal((b, t, hidden)).astype(np.float32)}


def quantized_mlp() -> tuple[ov.Model, dict[str, np.ndarray]]:
    """FakeQuantize around a MatMul, as post-training quantization leaves it: activations to 256
    levels with one range, weights to 255 levels with a range per output channel, then a bias
    and Relu."""
    rng = np.random.default_rng(6)
    x = ops.parameter([4, 16], ov.Type.f32, name="x")

    def f32(values):
        return ops.constant(np.asarray(values, np.float32))

    xq = ops.fake_quantize(x, f32(-2.5), f32(2.5), f32(-2.5), f32(2.5), 256)
    w = rng.standard_normal((16, 8)).astype(np.float32)
    limit = np.abs(w).max(axis=0, keepdims=True)
    wq = ops.fake_quantize(f32(w), f32(-limit), f32(limit), f32(-limit), f32(limit), 255)
    y = _named(ops.relu(ops.add(ops.matmul(xq, wq, False, False), f32(0.1 * rng.standard_normal(8)))), "y")
    model = ov.Model([ops.result(y)], [x], "quantized_mlp")
    return model, {"x": (1.2 * rng.standard_normal((4, 16))).astype(np.float32)}


def small_cnn() -> tuple[ov.Model, dict[str, np.ndarray]]:
    """A small image classifier laid out as converters leave one: a 3x3 Convolution with its
    bias as a separate Add, Relu and a 2x2 MaxPool; a depthwise 3x3 GroupConvolution,
    BatchNormInference and Relu; a pointwise 1x1 Convolution, a 2x2 AvgPool and a global
    ReduceMean; then a MatMul classifier head and Softmax. x is [1, 3, 32, 32], 10 classes;
    the outputs are the probabilities and the logits."""
    rng = np.random.default_rng(7)

    # The weights are named as a converted PyTorch model's are, so that tools/bench.py can
    # find them in the IR and build the equivalent ONNX model from the same values.
    def f32(name, values):
        return ops.constant(np.asarray(values, np.float32), name=name)

    def he(name, *shape):  # He-scaled weights keep activations of the same magnitude layer to layer
        return f32(name, rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:])))

    def bias(name, channels):
        return f32(name, 0.1 * rng.standard_normal((1, channels, 1, 1)))

    x = ops.parameter([1, 3, 32, 32], ov.Type.f32, name="x")
    conv1 = ops.convolution(x, he("conv1.weight", 16, 3, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1])
    conv1 = ops.relu(ops.add(conv1, bias("conv1.bias", 16)))
    pool1 = ops.max_pool(conv1, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2]).output(0)
    depthwise = ops.group_convolution(pool1, he("dw.weight", 16, 1, 1, 3, 3), [1, 1], [1, 1], [1, 1], [1, 1])
    norm = ops.batch_norm_inference(depthwise, f32("bn.weight", 1 + 0.1 * rng.standard_normal(16)),
                                    f32("bn.bias", 0.1 * rng.standard_normal(16)),
                                    f32("bn.running_mean", 0.1 * rng.standard_normal(16)),
                                    f32("bn.running_var", rng.uniform(0.5, 1.5, 16)), 1e-5)
    pointwise = ops.convolution(ops.relu(norm), he("pw.weight", 32, 16, 1, 1), [1, 1], [0, 0], [0, 0], [1, 1])
    pointwise = ops.relu(ops.add(pointwise, bias("pw.bias", 32)))
    pool2 = ops.avg_pool(pointwise, [2, 2], [0, 0], [0, 0], [2, 2], True)
    features = ops.reduce_mean(pool2, ops.constant(np.array([2, 3], np.int64)), False)
    logits = ops.add(ops.matmul(features, f32("fc.weight", rng.standard_normal((32, 10)) / np.sqrt(32)), False, False),
                     f32("fc.bias", 0.1 * rng.standard_normal(10)))
    _named(logits, "logits")
    probs = _named(ops.softmax(logits, -1), "probs")
    # The logits are an output too: Softmax squeezes differences, the logits show them whole.
    model = ov.Model([ops.result(probs), ops.result(logits)], [x], "small_cnn")
    return model, {"x": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)}


def lstm_sequence() -> tuple[ov.Model, dict[str, np.ndarray]]:
    """A bidirectional LSTMSequence-5 over x [batch 2, time 7, features 16] with hidden size 32
    and per-sequence lengths (7 and 5: the second sequence is padded), then a MatMul head on
    both directions' outputs of every time step. The final hidden state is a second output."""
    rng = np.random.default_rng(8)
    batch, time, features, hidden, directions = 2, 7, 16, 32, 2

    def uniform(*shape):  # the range PyTorch initializes an LSTM's weights in
        return ops.constant(rng.uniform(-1, 1, shape).astype(np.float32) / np.float32(np.sqrt(hidden)))

    x = ops.parameter([batch, time, features], ov.Type.f32, name="x")
    h0 = ops.parameter([batch, directions, hidden], ov.Type.f32, name="h0")
    c0 = ops.parameter([batch, directions, hidden], ov.Type.f32, name="c0")
    lengths = ops.parameter([batch], ov.Type.i32, name="seq_lengths")
    lstm = ops.lstm_sequence(x, h0, c0, lengths, uniform(directions, 4 * hidden, features),
                             uniform(directions, 4 * hidden, hidden), uniform(directions, 4 * hidden),
                             hidden, "bidirectional")
    # Y is [batch, directions, time, hidden]: time-major features per step for the head.
    per_step = ops.reshape(ops.transpose(lstm.output(0), ops.constant(np.array([0, 2, 1, 3], np.int64))),
                           ops.constant(np.array([batch, time, directions * hidden], np.int64)), False)
    scores = _named(ops.add(ops.matmul(per_step, uniform(directions * hidden, 10), False, False), uniform(10)),
                    "scores")
    lstm.output(1).get_tensor().set_names({"h_n"})
    model = ov.Model([ops.result(scores), ops.result(lstm.output(1))], [x, h0, c0, lengths], "lstm_sequence")
    feeds = {
        "x": rng.standard_normal((batch, time, features)).astype(np.float32),
        "h0": (0.1 * rng.standard_normal((batch, directions, hidden))).astype(np.float32),
        "c0": (0.1 * rng.standard_normal((batch, directions, hidden))).astype(np.float32),
        "seq_lengths": np.array([time, 5], np.int32),
    }
    return model, feeds


def _variable(name: str, shape: list[int]) -> op.util.Variable:
    info = op.util.VariableInfo()
    info.data_shape = ov.PartialShape(shape)
    info.data_type = ov.Type.f32
    info.variable_id = name
    return op.util.Variable(info)


def stateful_decoder() -> tuple[ov.Model, dict[str, np.ndarray]]:
    """One attention block of a causal LM with its KV cache in model state, as LLM exports write
    it: x is [1, ?, 64] (the new tokens' embeddings), 4 heads of 16. Each variable holds
    [batch, heads, past tokens, 16] and starts as a Broadcast of zeros with 0 past tokens, its
    shape taken from ShapeOf(x); the new keys and values are concatenated to it and Assigned.
    ScaledDotProductAttention-13 gets an explicit additive mask that lets a new token see the
    past and the new tokens up to itself, so one call serves both a prompt and a single token.
    Then the output projection, a residual Add and an MVN layer norm. The feeds are one step
    each: a 4-token prompt, then 3 single tokens."""
    import openvino.opset6 as o6
    import openvino.opset13 as o13

    rng = np.random.default_rng(9)
    hidden, heads = 64, 4
    d = hidden // heads

    def weight(*shape):
        return ops.constant((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    def i64(*values):
        return ops.constant(np.array(values, np.int64))

    def dim(node, axis):  # one dimension of a shape, as a scalar
        return ops.gather(ops.shape_of(node), ops.constant(np.int64(axis)), ops.constant(np.int64(0)))

    x = ops.parameter([1, -1, hidden], ov.Type.f32, name="x")
    empty = ops.broadcast(ops.constant(np.float32(0)),
                          ops.concat([ops.unsqueeze(dim(x, 0), i64(0)), i64(heads, 0, d)], 0))

    def heads_first(y):  # [b, t, hidden] -> [b, heads, t, d]
        return ops.transpose(ops.reshape(y, i64(0, -1, heads, d), True), i64(0, 2, 1, 3))

    def projection(y):
        return ops.add(ops.matmul(y, weight(hidden, hidden), False, False), weight(hidden))

    q = heads_first(projection(x))
    caches = []
    for name in ("past_key", "past_value"):
        variable = _variable(name, [-1, heads, -1, d])
        joined = ops.concat([o6.read_value(empty, variable), heads_first(projection(x))], 2)
        caches.append((joined, o6.assign(joined, variable)))
    (k, assign_k), (v, assign_v) = caches

    # Token positions: the new tokens are the last of the `total` now in the cache.
    total = dim(k, 2)
    one, zero = ops.constant(np.int64(1)), ops.constant(np.int64(0))
    query_pos = ops.unsqueeze(ops.range(ops.subtract(total, dim(x, 1)), total, one, "i64"), i64(1))
    key_pos = ops.range(zero, total, one, "i64")
    lowest = np.finfo(np.float32).min
    mask = ops.select(ops.less_equal(key_pos, query_pos), ops.constant(np.float32(0)), ops.constant(lowest))
    attended = o13.scaled_dot_product_attention(q, k, v, mask, causal=False)
    merged = ops.reshape(ops.transpose(attended, i64(0, 2, 1, 3)), i64(0, -1, hidden), True)
    h = ops.add(x, projection(merged))
    gamma = ops.constant((1 + 0.1 * rng.standard_normal(hidden)).astype(np.float32))
    beta = ops.constant((0.1 * rng.standard_normal(hidden)).astype(np.float32))
    y = _named(ops.add(ops.multiply(ops.mvn(h, i64(-1), True, 1e-5, "inside_sqrt"), gamma), beta), "y")
    model = ov.Model([ops.result(y)], [assign_k, assign_v], [x], "stateful_decoder")
    lengths = [4, 1, 1, 1]
    feeds = {f"step{k}/x": rng.standard_normal((1, n, hidden)).astype(np.float32) for k, n in enumerate(lengths)}
    return model, feeds


MODELS: dict[str, tuple[Callable[[], tuple[ov.Model, dict[str, np.ndarray]]], str]] = {
    "affine_chain": (affine_chain, "v11"),
    "mixed_types_v10": (mixed_types_v10, "v10"),
    "dynamic_batch": (dynamic_batch, "v11"),
    "paged_kv_cache": (paged_kv_cache, "v11"),
    "transformer_block": (transformer_block, "v11"),
    "quantized_mlp": (quantized_mlp, "v11"),
    "small_cnn": (small_cnn, "v11"),
    "lstm_sequence": (lstm_sequence, "v11"),
    "stateful_decoder": (stateful_decoder, "v11"),
}


def save(model: ov.Model, xml: Path, ir_version: str) -> None:
    if ir_version == "v10":
        manager = passes.Manager()
        manager.register_pass(passes.Serialize(str(xml), str(xml.with_suffix(".bin")), passes.Version.IR_V10))
        manager.run_passes(model)
    else:
        ov.save_model(model, str(xml), compress_to_fp16=False)


def expected_outputs(model: ov.Model, xml: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Outputs keyed by the tensor names the model was built with (v10 reading adds others).

    Feeds keyed `step<k>/<name>` are the steps of a stateful model: they run in order on one
    infer request, so that its variables carry over, and its outputs are keyed `step<k>/<name>`."""
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    names = [sorted(out.get_names())[0] for out in model.outputs]
    steps: dict[int, dict[str, np.ndarray]] = {}
    for key, value in feeds.items():
        step, sep, name = key.partition("/")
        if sep and step.startswith("step") and step[4:].isdigit():
            steps.setdefault(int(step[4:]), {})[name] = value
    if not steps:
        values = list(compiled(feeds).values())
        return {name: np.asarray(v) for name, v in zip(names, values)}
    request = compiled.create_infer_request()
    out = {}
    for k in sorted(steps):
        values = list(request.infer(steps[k]).values())
        # The request reuses its output tensors: each step's values are copied before the next.
        out.update({f"step{k}/{name}": np.array(v, copy=True) for name, v in zip(names, values)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="models", type=Path)
    parser.add_argument("names", nargs="*", help="the models to write (default: all)")
    args = parser.parse_args()
    for name, (build, version) in MODELS.items():
        if args.names and name not in args.names:
            continue
        folder = args.out / name
        folder.mkdir(parents=True, exist_ok=True)
        model, feeds = build()
        xml = folder / "model.xml"
        save(model, xml, version)
        np.savez(folder / "inputs.npz", **feeds)
        np.savez(folder / "expected.npz", **expected_outputs(model, xml, feeds))
        print(f"wrote {folder}")


if __name__ == "__main__":
    main()
