"""Generate `models/relative_position_bias`, the model of the README's debugging walkthrough.

Attention scores plus a learned bias looked up by the bucketed distance between positions, as
T5-style relative attention computes it. The bucket is an integer division of a signed
distance by 4, written by OpenVINO's Python API as Divide with Python's floor rounding
(`m_pythondiv`, its default). The spec floors; OpenVINO's CPU plugin truncates toward zero,
so every key before its query (a negative distance not a multiple of 4) gets the bias of the
wrong bucket there.

`expected.npz` holds the spec's values, computed here with numpy alone (no runtime), so that
`irscatter run --expected` and the tests check irscatter against an independent oracle.
Run from the repository root:

    python tools/make_debug_models.py [--out models]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset15 as ops

HEADS, LENGTH, BUCKETS = 2, 12, 16


def relative_position_bias() -> tuple[ov.Model, dict[str, np.ndarray], np.ndarray]:
    positions = ops.parameter([LENGTH], ov.Type.i64, name="positions")
    scores = ops.parameter([HEADS, LENGTH, LENGTH], ov.Type.f32, name="scores")
    table = np.random.default_rng(11).standard_normal((BUCKETS, HEADS)).astype(np.float32)
    distance = ops.subtract(ops.unsqueeze(positions, ops.constant(np.int64(0))),
                            ops.unsqueeze(positions, ops.constant(np.int64(1))))  # key - query
    bucket = ops.divide(distance, ops.constant(np.int64(4)))  # m_pythondiv: Python's floor
    bucket = ops.minimum(ops.maximum(bucket, ops.constant(np.int64(-BUCKETS // 2))),
                         ops.constant(np.int64(BUCKETS // 2 - 1)))
    index = ops.add(bucket, ops.constant(np.int64(BUCKETS // 2)))
    bias = ops.transpose(ops.gather(ops.constant(table), index, ops.constant(np.int64(0))),
                         ops.constant(np.array([2, 0, 1], np.int64)))
    probs = ops.softmax(ops.add(scores, bias), -1)
    probs.output(0).get_tensor().set_names({"probs"})
    model = ov.Model([ops.result(probs)], [positions, scores], "relative_position_bias")
    rng = np.random.default_rng(12)
    feeds = {"positions": np.arange(LENGTH, dtype=np.int64),
             "scores": rng.standard_normal((HEADS, LENGTH, LENGTH)).astype(np.float32)}
    return model, feeds, table


def spec_values(feeds: dict[str, np.ndarray], table: np.ndarray) -> np.ndarray:
    """The model's output as its ops' specs define it, in numpy."""
    pos = feeds["positions"]
    bucket = np.clip((pos[None, :] - pos[:, None]) // 4, -BUCKETS // 2, BUCKETS // 2 - 1)
    logits = feeds["scores"] + table[bucket + BUCKETS // 2].transpose(2, 0, 1)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="models", type=Path)
    folder = parser.parse_args().out / "relative_position_bias"
    folder.mkdir(parents=True, exist_ok=True)
    model, feeds, table = relative_position_bias()
    ov.save_model(model, folder / "model.xml", compress_to_fp16=False)
    np.savez(folder / "inputs.npz", **feeds)
    np.savez(folder / "expected.npz", probs=spec_values(feeds, table))
    print(f"wrote {folder}")


if __name__ == "__main__":
    main()
