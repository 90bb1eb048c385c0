"""The decoder-shaped workload of tools/bench.py: one decode step of a model at Qwen2.5-0.5B's
shapes, its weights in f32 or compressed as NNCF writes them.

The model is built with OpenVINO's opset API and saved without f16 compression; the weights are
random (seeded). One token goes through 24 blocks, each an RMS-like normalisation, the q/k/v/o
projections, a second normalisation, the gate/up/down MLP and two residual adds, then a final
normalisation and the lm_head. There is no attention: q, k and v are only mixed cheaply, since
what the workload measures is the cost of reading the weights once per step.

Compressed weights follow NNCF's decompression subgraph (OpenVINO's docs, MarkDequantization:
Convert -> Subtract of a converted zero point -> Multiply by a scale):

* int8 asymmetric, per output channel: u8 weight [N, K] -> Convert f16 -> Subtract (u8 zero
  point [N, 1] -> Convert f16) -> Multiply (f16 scale [N, 1]) -> Convert f32 -> MatMul.
* int4 asymmetric, groups of 128: u4 weight [N, K/128, 128] -> Convert f16 -> Subtract (u4
  zero point [N, K/128, 1] -> Convert f16) -> Multiply (f16 scale [N, K/128, 1]) -> Reshape
  [N, K] -> Convert f32 -> MatMul. The lm_head stays int8, as NNCF keeps the last linear
  layer unless told otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

HIDDEN, KV, FFN, VOCAB, BLOCKS, GROUP = 896, 128, 4864, 151936, 24, 128
SMALL = dict(hidden=256, kv=128, ffn=512, vocab=1024, blocks=2)  # --small: checks the script in seconds


@dataclass(frozen=True)
class Shapes:
    hidden: int = HIDDEN
    kv: int = KV
    ffn: int = FFN
    vocab: int = VOCAB
    blocks: int = BLOCKS


class Weights:
    """Random weights as Consts (and their decompression) in one of three formats; int4 in
    groups of `group` along a row."""

    def __init__(self, fmt: str, seed: int, group: int = GROUP) -> None:
        import openvino as ov
        import openvino.opset13 as ops

        self.ov, self.ops, self.fmt, self.group = ov, ops, fmt, group
        self.rng = np.random.default_rng(seed)

    def linear(self, x, rows: int, cols: int, last: bool = False):
        """x @ W^T for a weight W [rows, cols] in this format."""
        if self.fmt == "f32":
            weight = self.ops.constant(self.rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02))
        elif self.fmt == "int8" or last:
            weight = self._decompressed(rows, cols, None)
        else:
            weight = self._decompressed(rows, cols, self.group)
        return self.ops.matmul(x, weight, transpose_a=False, transpose_b=True)

    def _decompressed(self, rows: int, cols: int, group: int | None):
        ov, ops = self.ov, self.ops
        if group is None:
            shape, side, etype, high = (rows, cols), (rows, 1), ov.Type.u8, 256
        else:
            shape, side, etype, high = (rows, cols // group, group), (rows, cols // group, 1), ov.Type.u4, 16
        codes = self.rng.integers(0, high, shape, dtype=np.uint8)
        zero = self.rng.integers(high // 2 - high // 8, high // 2 + high // 8, side, dtype=np.uint8)
        scale = (self.rng.random(side, dtype=np.float32) * np.float32(0.004) + np.float32(0.001)).astype(np.float16)
        weight = ops.convert(self._const(codes, etype), ov.Type.f16)
        weight = ops.subtract(weight, ops.convert(self._const(zero, etype), ov.Type.f16))
        weight = ops.multiply(weight, ops.constant(scale))
        if group is not None:
            weight = ops.reshape(weight, ops.constant(np.array([rows, cols], np.int64)), special_zero=False)
        return ops.convert(weight, ov.Type.f32)

    def _const(self, codes: np.ndarray, etype):
        if etype != self.ov.Type.u4:
            return self.ops.constant(codes)
        tensor = self.ov.Tensor(etype, list(codes.shape))
        flat = codes.reshape(-1)
        tensor.data[:] = flat[0::2] | (flat[1::2] << 4)  # two codes a byte, the first in the low nibble
        return self.ops.constant(tensor)


def _norm(ops, x):
    """x / sqrt(mean(x^2) + eps) over the last axis."""
    axis = ops.constant(np.array([-1], np.int64))
    mean = ops.reduce_mean(ops.multiply(x, x), axis, keep_dims=True)
    return ops.divide(x, ops.sqrt(ops.add(mean, ops.constant(np.float32(1e-6)))))


def build(fmt: str, shapes: Shapes = Shapes(), seed: int = 12):
    """The decode-step model (an `openvino.Model`) with weights in `fmt` (f32, int8 or int4)."""
    import openvino as ov
    import openvino.opset13 as ops

    w = Weights(fmt, seed)
    x = ops.parameter([1, 1, shapes.hidden], ov.Type.f32, name="x")
    axis = ops.constant(np.array([-1], np.int64))
    h = x
    for _ in range(shapes.blocks):
        n = _norm(ops, h)
        q = w.linear(n, shapes.hidden, shapes.hidden)
        k = w.linear(n, shapes.kv, shapes.hidden)
        v = w.linear(n, shapes.kv, shapes.hidden)
        mixed = ops.add(q, ops.add(ops.reduce_mean(k, axis, keep_dims=True), ops.reduce_mean(v, axis, keep_dims=True)))
        h = ops.add(h, w.linear(mixed, shapes.hidden, shapes.hidden))
        n = _norm(ops, h)
        gated = ops.multiply(ops.swish(w.linear(n, shapes.ffn, shapes.hidden)), w.linear(n, shapes.ffn, shapes.hidden))
        h = ops.add(h, w.linear(gated, shapes.hidden, shapes.ffn))
    logits = w.linear(_norm(ops, h), shapes.vocab, shapes.hidden, last=True)
    logits.output(0).get_tensor().set_names({"logits"})
    return ov.Model([ops.result(logits)], [x], f"decoder_{fmt}")


def write(fmt: str):
    """A bench.py workload writer: the model in `fmt`, saved into the work folder, and one token."""
    def write_into(folder: Path, small: bool) -> None:
        import openvino as ov

        folder.mkdir(parents=True, exist_ok=True)
        shapes = Shapes(**SMALL) if small else Shapes()
        ov.save_model(build(fmt, shapes), folder / "model.xml", compress_to_fp16=False)
        token = np.random.default_rng(13).standard_normal((1, 1, shapes.hidden), dtype=np.float32)
        np.savez(folder / "feeds.npz", x=token)
    return write_into
