"""SpaceToBatch-2 against OpenVINO's CPU plugin and `oracles.spatial.space_to_batch`.

Exact (a zero padding and a permutation). Ranks 2 to 5, blocks of 1 to 3 per spatial axis,
pads on either side, the three integer inputs as constants (the output shape known at
inference) and as run-time Parameters (known only to the kernel), in i32 and i64, every
element type class with edge values, size-0 axes, and the refusals (at inference and at run
time): data rank below 2, integer inputs of another type, rank or length, a block below 1 or
block_shape[0] not 1, negative pads or pads on the batch axis, a padded axis that does not
divide by its block, an output past the tensor limit.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.spatial import space_to_batch

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "u16", "boolean")
# The CPU plugin narrows i64 to i32 and f64 to f32 (and past f32's range to its largest value);
# OpenVINO's core reference moves the bytes (for data of rank 4 and 5 only, reading the integer
# inputs as i64 only).
JUDGE = {"i64": {"openvino": "reference", "why": "the CPU plugin computes i64 in i32"},
         "f64": {"openvino": "reference", "why": "the CPU plugin computes f64 in f32"}}
# On data of rank 4 and 5 the CPU plugin fills some padding positions with data values read
# from beyond the padded axis (data [1, 1, 4, 1] with block_shape [1, 1, 1, 3] and pads_end
# [0, 0, 0, 2] gives batches [1 2 3 4], [2 3 4 0], [3 4 0 0] where the spec, OpenVINO's core
# reference and irscatter give [1 2 3 4], [0 0 0 0], [0 0 0 0]); those ranks are judged by the
# core reference.
RANK45 = {"openvino": "reference", "why": "the CPU plugin fills padding with data on ranks 4 and 5"}
NAMES = ("block_shape", "pads_begin", "pads_end")


def _case(name, x, block, begin, end, *, const=True, itype=np.int64, **extra):
    ints = [np.array(v, itype) for v in (block, begin, end)]
    return Case(name, "SpaceToBatch", "opset2",
                [Input("data", x), *(Input(n, v, const=const) for n, v in zip(NAMES, ints))],
                oracle=lambda a, b, c, d: space_to_batch(a, b, c, d), **extra)


def _random(rng, rank, dtype):
    blocks = [1] + [int(b) for b in rng.integers(1, 4, rank - 1)]
    shape, begin, end = [int(rng.integers(1, 3))], [0], [0]
    for b in blocks[1:]:
        d = int(rng.integers(1, 5))
        total = -d % b + b * int(rng.integers(0, 2))
        first = int(rng.integers(0, total + 1))
        shape.append(d)
        begin.append(first)
        end.append(total - first)
    return harness.values(rng, shape, dtype, edges=True), blocks, begin, end


def _cases():
    rng = np.random.default_rng(25)
    cases = []
    for k, (tag, dtype) in enumerate(TYPES.items()):
        for rank in (2, 3, 4, 5):
            x, blocks, begin, end = _random(rng, rank, dtype)
            const = (k + rank) % 3 != 0
            judge = RANK45 if rank >= 4 else JUDGE.get(tag, {})
            if judge.get("openvino") == "reference" and rank < 4:
                judge = {"openvino": "none", "why": judge["why"] + "; the core reference takes ranks 4 and 5 only"}
            cases.append(_case(f"s2b-{tag}-r{rank}-{'const' if const else 'param'}-{'x'.join(map(str, x.shape))}",
                               x, blocks, begin, end, const=const, itype=np.int32 if rank < 4 and rank % 2 else np.int64,
                               **judge))
    spec = harness.values(rng, (2, 6, 10, 3, 3), np.float32)
    cases.append(_case("s2b-spec", spec, [1, 2, 4, 3, 1], [0, 0, 1, 0, 0], [0, 0, 1, 0, 0], **RANK45))
    cases.append(_case("s2b-cpu-departure", np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4, 1), [1, 1, 1, 3],
                       [0, 0, 0, 0], [0, 0, 0, 2], **RANK45))
    cases.append(_case("s2b-cpu-agrees-4d", harness.values(rng, (2, 3, 4, 2), np.float32), [1, 3, 2, 2],
                       [0, 0, 3, 0], [0, 0, 1, 0]))
    cases.append(_case("s2b-pad-only", harness.values(rng, (1, 1, 2), np.int32), [1, 1, 1], [0, 2, 1], [0, 1, 0]))
    cases.append(_case("s2b-string", np.array([["a", "b", "c"]], np.dtypes.StringDType()), [1, 2], [0, 1], [0, 0],
                       openvino="none", why="the CPU plugin does not take string tensors"))
    cases.append(_case("s2b-empty-batch", np.zeros((0, 2, 3), np.float32), [1, 2, 1], [0, 0, 0], [0, 0, 0],
                       openvino="none", why="the CPU plugin's reshapes fail on a batch of 0"))
    cases.append(_case("s2b-empty-spatial", np.zeros((1, 0, 3), np.float32), [1, 2, 3], [0, 1, 0], [0, 1, 0]))
    x = np.ones((2, 2, 3), np.float32)
    refusals = [
        ("rank", np.ones((4,), np.float32), [1], [0], [0], "data-rank"),
        ("block-type", x, np.array([1, 2, 1], np.float32), [0, 0, 0], [0, 0, 0], "block-input-type"),
        ("mixed-types", x, np.array([1, 2, 1], np.int32), [0, 0, 0], [0, 0, 0], "block-input-type"),
        ("length", x, [1, 2], [0, 0], [0, 0], "block-input-shape"),
        ("lengths-differ", x, [1, 2, 1], [0, 0, 0], [0, 0], "block-input-shape"),
        ("block-zero", x, [1, 2, 0], [0, 0, 0], [0, 0, 0], "block-shape-value"),
        ("block-batch", x, [2, 1, 1], [0, 0, 0], [0, 0, 0], "block-shape-value"),
        ("pad-negative", x, [1, 1, 1], [0, 0, -1], [0, 0, 0], "pads-value"),
        ("pad-batch", x, [1, 1, 1], [1, 0, 0], [0, 0, 0], "pads-value"),
        ("indivisible", x, [1, 2, 2], [0, 0, 0], [0, 0, 0], "pads-blocks"),
        ("huge", x, [1, 1, 1], [0, 2**40, 0], [0, 0, 0], "tensor-limit"),
    ]
    for name, data, block, begin, end, label in refusals:
        for const in (True, False):
            if not const and label in ("block-input-type", "data-rank"):
                continue
            ints = [v if isinstance(v, np.ndarray) else np.array(v, np.int64) for v in (block, begin, end)]
            cases.append(Case(f"s2b-refuses-{name}-{'const' if const else 'param'}", "SpaceToBatch", "opset2",
                              [Input("data", data), *(Input(n, v, const=const) for n, v in zip(NAMES, ints))],
                              error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_space_to_batch(case):
    harness.check(case, CASES)
