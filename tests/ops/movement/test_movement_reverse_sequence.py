"""ReverseSequence-1 against OpenVINO's CPU plugin and `oracles.movement.reverse_sequence`;
exact (the output copies data's elements).

Covered: ranks 2 to 5, size-0 dims, every pair of distinct batch and sequence axes (negative
ones too), lengths from 1 to the sequence length, integer and float lengths (truncated, as in
OpenVINO), lengths of 0 (which OpenVINO reads as 1 and the spec excludes, bounded by the
sequence axis, not the batch axis), every element type, lengths fed at run time, and the
refusals: a length outside [0, seq length], boolean or mis-shaped lengths, equal axes, axes out
of range and data of rank below 2.
"""

import functools

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.movement import reverse_sequence

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "boolean")
WHY = {"f64": "the CPU plugin moves f64 as f32", "i64": "the CPU plugin moves i64 as i32 (the extremes)",
       "i32": "the CPU plugin moves i32 as f32 in ReverseSequence (2147483647 comes back 2147483520)"}
NO_REFERENCE = ("f64", "i64", "i32")  # the core reference's ReverseSequence does not evaluate these types


def _case(tag, data, lengths, batch_axis=0, seq_axis=1, *, const=False, **extra):
    lengths = np.asarray(lengths)
    name = f"{tag}-{'x'.join(map(str, data.shape))}-b{batch_axis}-s{seq_axis}-{lengths.dtype}"
    return Case(name, "ReverseSequence", "opset1", [Input("data", data), Input("seq_lengths", lengths, const=const)],
                {"batch_axis": batch_axis, "seq_axis": seq_axis},
                oracle=functools.partial(reverse_sequence, batch_axis=batch_axis, seq_axis=seq_axis), **extra)


def _judge(tag, data):
    if tag not in WHY:
        return {}
    if data.size == 0 or tag in NO_REFERENCE:
        return {"openvino": "none", "why": WHY[tag] + "; the core reference does not evaluate it"}
    return {"openvino": "reference", "why": WHY[tag]}


def _cases():
    rng = np.random.default_rng(22)
    cases = []
    length_types = [np.int32, np.int64, np.float32, np.uint8]
    for tag, dtype in TYPES.items():
        for k, shape in enumerate(harness.shapes(rng, ranks=(2, 3, 4, 5), zero=False)):
            rank = len(shape)
            b, s = (int(a) for a in rng.choice(rank, 2, replace=False))
            b, s = (b - rank if rng.random() < 0.3 else b), (s - rank if rng.random() < 0.3 else s)
            lengths = rng.integers(1, shape[s] + 1, shape[b]).astype(length_types[k % 4])
            data = harness.values(rng, shape, dtype, edges=True, **({"low": -100, "high": 100} if tag[0] in "iu" else {}))
            cases.append(_case(tag, data, lengths, b, s, **_judge(tag, data)))
    x = np.arange(4 * 10 * 2, dtype=np.float32).reshape(4, 10, 2)
    cases += [
        _case("example", x, np.array([2, 4, 8, 10])),
        _case("swapped", x.transpose(1, 0, 2).copy(), np.array([2, 4, 8, 10]), 1, 0),
        _case("last-axes", x, np.array([1, 2]), -1, -2),
        _case("float-truncated", x, np.array([1.9, 2.5, 9.99, 10.0], np.float32)),
        _case("f16-lengths", x, np.array([1.5, 2.5, 3.5, 4.5], np.float16)),
        _case("const", x, np.array([3, 1, 10, 5]), const=True),
        _case("i32-small", x.astype(np.int32), np.array([3, 1, 10, 5])),  # the plugin's exact range
        _case("i64-small", x.astype(np.int64), np.array([3, 1, 10, 5], np.int32)),
        _case("f64-small", x.astype(np.float64), np.array([3, 1, 10, 5], np.int32)),
        _case("empty-batch", np.zeros((0, 3), np.float32), np.zeros(0, np.int64),
              openvino="none", why="OpenVINO fails on an empty input"),
        _case("empty-other", np.zeros((2, 3, 0), np.float32), np.array([1, 3]),
              openvino="none", why="OpenVINO fails on an empty input"),
    ]
    cases += [
        # a length of 0, as an ONNX-converted model has it: nothing reversed, as with 1
        _case("zero", x, np.array([0, 2, 3, 4])),
        _case("zero-const", x, np.array([0, 2, 10, 0]), const=True),
        _case("zero-f32", x, np.array([0, 0.5, 3.5, 10], np.float32)),
        _case("zero-long-sequence", x.transpose(2, 1, 0).copy(), np.array([0, 4]), 0, 2),  # 4 > 2 batches
        _case("zero-short-sequence", x.transpose(2, 1, 0).copy(), np.array([0, 10]), 0, 1),
    ]
    cases += [
        _case("over", x, np.array([1, 2, 3, 11]), error="seq_lengths-range"),
        _case("negative", x, np.array([1, -2, 3, 4]), error="seq_lengths-range"),
        _case("nan", x, np.array([1, np.nan, 3, 4], np.float32), error="seq_lengths-range"),
        _case("over-on-the-sequence-axis", x.transpose(2, 1, 0).copy(), np.array([0, 5]), 0, 2,
              error="seq_lengths-range"),  # 5 is below the 10 of axis 1, over the 4 of the sequence axis
        _case("boolean", x, np.array([True, True, False, True]), error="seq_lengths-type"),
        _case("short", x, np.array([1, 2, 3]), error="seq_lengths-shape"),
        _case("scalar-lengths", x, np.array(2), error="seq_lengths-shape"),
        _case("same-axes", x, np.array([1, 1, 1, 1]), 0, -3, error="reverse-sequence-axes"),
        _case("axis-range", x, np.array([1, 1, 1, 1]), 0, 3, error="axis-range"),
        _case("rank-1", np.zeros(4, np.float32), np.array([1, 1, 1, 1]), 0, 0, error="data-rank"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reverse_sequence(case):
    harness.check(case, CASES)
