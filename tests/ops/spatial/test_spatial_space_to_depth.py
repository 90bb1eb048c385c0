"""SpaceToDepth-1 against OpenVINO's CPU plugin and `oracles.spatial.space_to_depth`.

Exact (a permutation). Both modes, block sizes 1 to 3, 1 to 3 spatial axes, size-0 axes, every
element type class (floats with NaN, +-inf, -0.0 and a denormal, integers with their extremes,
booleans), and the refusals: rank below 3, block_size below 1, a spatial dimension that does
not divide by block_size, an unknown mode.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.spatial import space_to_depth

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "u16", "boolean")
# The CPU plugin narrows i64 to i32 and f64 to f32 (and past f32's range to its largest value);
# OpenVINO's core reference moves the bytes.
JUDGE = {"i64": {"openvino": "reference", "why": "the CPU plugin computes i64 in i32"},
         "f64": {"openvino": "reference", "why": "the CPU plugin computes f64 in f32"}}


def _case(name, x, block_size, mode, **extra):
    return Case(name, "SpaceToDepth", "opset1", [Input("data", x)], {"block_size": block_size, "mode": mode},
                oracle=lambda a: space_to_depth(a, block_size, mode), **extra)


def _cases():
    rng = np.random.default_rng(22)
    cases = []
    for k, (tag, dtype) in enumerate(TYPES.items()):
        for mode in ("blocks_first", "depth_first"):
            spatial_rank = 1 + k % 3
            size = 1 + (k + (mode == "depth_first")) % 3
            shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)),
                     *(size * int(d) for d in rng.integers(1, 3, spatial_rank)))
            x = harness.values(rng, shape, dtype, edges=True)
            cases.append(_case(f"s2d-{tag}-{mode}-b{size}-{'x'.join(map(str, shape))}", x, size, mode,
                               **JUDGE.get(tag, {})))
    for mode in ("blocks_first", "depth_first"):
        cases.append(_case(f"s2d-4d-{mode}", harness.values(rng, (1, 2, 3, 6, 3, 3), np.float32), 3, mode))
        cases.append(_case(f"s2d-spec-{mode}", harness.values(rng, (5, 7, 4, 6), np.float32), 2, mode))
        cases.append(_case(f"s2d-empty-batch-{mode}", np.zeros((0, 2, 2, 2), np.float32), 2, mode))
        cases.append(_case(f"s2d-empty-spatial-{mode}", np.zeros((1, 2, 0, 4), np.int32), 2, mode))
    f = np.ones((1, 2, 4, 6), np.float32)
    for name, x, attrs, label in [
        ("rank", np.ones((2, 4), np.float32), {"block_size": 2, "mode": "blocks_first"}, "data-rank"),
        ("block-zero", f, {"block_size": 0, "mode": "blocks_first"}, "block-size"),
        ("block-negative", f, {"block_size": -1, "mode": "depth_first"}, "block-size"),
        ("indivisible", f, {"block_size": 3, "mode": "depth_first"}, "space-blocks"),
        ("mode", f, {"block_size": 2, "mode": "depth_last"}, "attributes"),
    ]:
        cases.append(Case(f"s2d-refuses-{name}", "SpaceToDepth", "opset1", [Input("data", x)], attrs, error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_space_to_depth(case):
    harness.check(case, CASES)
