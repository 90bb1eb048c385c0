"""BatchToSpace-2 against OpenVINO's CPU plugin and `oracles.spatial.batch_to_space`.

Exact (a permutation and a crop). Ranks 2 to 5, blocks of 1 to 3 per spatial axis, crops on
either side up to the whole axis, the three integer inputs as constants (the output shape known
at inference) and as run-time Parameters (known only to the kernel), in i32 and i64, every
element type class with edge values, size-0 axes, and the refusals (at inference and at run
time): data rank below 2, integer inputs of another type, rank or length, a block below 1 or
block_shape[0] not 1, negative crops or crops on the batch axis, crops past an axis's size, a
batch that does not divide by the blocks.
"""

import math

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.spatial import batch_to_space

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "u16", "boolean")
# The CPU plugin narrows i64 to i32 and f64 to f32 (and past f32's range to its largest value);
# OpenVINO's core reference moves the bytes (and reads the integer inputs as i64 only).
JUDGE = {"i64": {"openvino": "reference", "why": "the CPU plugin computes i64 in i32"},
         "f64": {"openvino": "reference", "why": "the CPU plugin computes f64 in f32"}}


def _case(name, x, block, begin, end, *, const=True, itype=np.int64, **extra):
    ints = [np.array(v, itype) for v in (block, begin, end)]
    return Case(name, "BatchToSpace", "opset2",
                [Input("data", x), *(Input(n, v, const=const) for n, v in zip(("block_shape", "crops_begin",
                                                                                  "crops_end"), ints))],
                oracle=lambda a, b, c, d: batch_to_space(a, b, c, d), **extra)


def _random(rng, rank, dtype, edges=True):
    blocks = [1] + [int(b) for b in rng.integers(1, 4, rank - 1)]
    spatial = [int(d) for d in rng.integers(1, 4, rank - 1)]
    shape = [int(rng.integers(1, 3)) * math.prod(blocks), *spatial]
    begin, end = [0], [0]
    for d, b in zip(spatial, blocks[1:]):
        total = int(rng.integers(0, d * b + 1))
        first = int(rng.integers(0, total + 1))
        begin.append(first)
        end.append(total - first)
    return harness.values(rng, shape, dtype, edges=edges), blocks, begin, end


def _cases():
    rng = np.random.default_rng(24)
    cases = []
    for k, (tag, dtype) in enumerate(TYPES.items()):
        for rank in (2, 3, 4, 5):
            x, blocks, begin, end = _random(rng, rank, dtype)
            const = (k + rank) % 3 != 0
            cases.append(_case(f"b2s-{tag}-r{rank}-{'const' if const else 'param'}-{'x'.join(map(str, x.shape))}",
                               x, blocks, begin, end, const=const,
                               itype=np.int32 if rank % 2 and tag not in JUDGE else np.int64,
                               **JUDGE.get(tag, {})))
    spec = harness.values(rng, (48, 3, 3, 1, 3), np.float32)
    cases.append(_case("b2s-spec-5d", spec, [1, 2, 4, 3, 1], [0, 0, 1, 0, 0], [0, 0, 1, 0, 0]))
    cases.append(_case("b2s-spec-2d", harness.values(rng, (10, 2), np.float32), [1, 5], [0, 2], [0, 0]))
    cases.append(_case("b2s-crop-all", harness.values(rng, (4, 2, 3), np.float32), [1, 2, 2], [0, 4, 0], [0, 0, 6]))
    cases.append(_case("b2s-empty-batch", np.zeros((0, 2, 3), np.float32), [1, 2, 1], [0, 0, 0], [0, 1, 0],
                       openvino="none", why="the CPU plugin's reshapes fail on a batch of 0"))
    cases.append(_case("b2s-empty-spatial", np.zeros((4, 0, 3), np.float32), [1, 2, 2], [0, 0, 1], [0, 0, 1]))
    x = np.ones((4, 2, 3), np.float32)
    refusals = [
        ("rank", np.ones((4,), np.float32), [1], [0], [0], {}, "data-rank"),
        ("block-type", x, np.array([1, 2, 2], np.float32), [0, 0, 0], [0, 0, 0], {}, "block-input-type"),
        ("mixed-types", x, np.array([1, 2, 2], np.int32), [0, 0, 0], [0, 0, 0], {}, "block-input-type"),
        ("block-rank", x, np.array([[1, 2, 2]], np.int64), np.array([[0, 0, 0]]), np.array([[0, 0, 0]]), {},
         "block-input-shape"),
        ("length", x, [1, 2], [0, 0], [0, 0], {}, "block-input-shape"),
        ("lengths-differ", x, [1, 2, 2], [0, 0], [0, 0, 0], {}, "block-input-shape"),
        ("block-zero", x, [1, 0, 2], [0, 0, 0], [0, 0, 0], {}, "block-shape-value"),
        ("block-batch", x, [2, 2, 1], [0, 0, 0], [0, 0, 0], {}, "block-shape-value"),
        ("crop-negative", x, [1, 2, 2], [0, -1, 0], [0, 0, 0], {}, "crops-value"),
        ("crop-batch", x, [1, 2, 2], [0, 0, 0], [1, 0, 0], {}, "crops-value"),
        ("crop-past", x, [1, 2, 2], [0, 3, 0], [0, 2, 0], {}, "crops-value"),
        ("batch-indivisible", x, [1, 3, 1], [0, 0, 0], [0, 0, 0], {}, "batch-blocks"),
    ]
    for name, data, block, begin, end, _, label in refusals:
        for const in (True, False):
            if not const and label in ("block-input-type", "data-rank") or not const and name == "block-rank":
                continue
            ints = [v if isinstance(v, np.ndarray) else np.array(v, np.int64) for v in (block, begin, end)]
            cases.append(Case(f"b2s-refuses-{name}-{'const' if const else 'param'}", "BatchToSpace", "opset2",
                              [Input("data", data), *(Input(n, v, const=const) for n, v in
                                                      zip(("block_shape", "crops_begin", "crops_end"), ints))],
                              error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_batch_to_space(case):
    harness.check(case, CASES)
