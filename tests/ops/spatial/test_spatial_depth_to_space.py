"""DepthToSpace-1 against OpenVINO's CPU plugin and `oracles.spatial.depth_to_space`.

Exact (a permutation). Both modes, block sizes 1 to 3, 1 to 3 spatial axes, a size-0 batch and
spatial axis, every element type class (floats with NaN, +-inf, -0.0 and a denormal, integers
with their extremes, booleans), and the refusals: rank below 3, block_size below 1, a channel
dimension that does not divide by block_size^K, an unknown mode.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.spatial import depth_to_space

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "u16", "boolean")

# The CPU plugin narrows i64 to i32 and f64 to f32; OpenVINO's core reference moves the bytes.
JUDGE = {"i64": {"openvino": "reference", "why": "the CPU plugin computes i64 in i32"},
         "f64": {"openvino": "reference", "why": "the CPU plugin computes f64 in f32"}}


def _case(name, x, block_size, mode, **extra):
    return Case(name, "DepthToSpace", "opset1", [Input("data", x)], {"block_size": block_size, "mode": mode},
                oracle=lambda a: depth_to_space(a, block_size, mode), **extra)


def _cases():
    rng = np.random.default_rng(21)
    cases = []
    for k, (tag, dtype) in enumerate(TYPES.items()):
        for mode in ("blocks_first", "depth_first"):
            spatial_rank = 1 + k % 3
            size = 1 + (k + (mode == "depth_first")) % 3
            depth = int(rng.integers(1, 3))
            shape = (int(rng.integers(1, 3)), depth * size**spatial_rank,
                     *(int(d) for d in rng.integers(1, 4, spatial_rank)))
            x = harness.values(rng, shape, dtype, edges=True)
            cases.append(_case(f"d2s-{tag}-{mode}-b{size}-{'x'.join(map(str, shape))}", x, size, mode,
                               **JUDGE.get(tag, {})))
    for mode in ("blocks_first", "depth_first"):
        cases.append(_case(f"d2s-4d-{mode}", harness.values(rng, (2, 27, 2, 1, 2), np.float32), 3, mode))
        cases.append(_case(f"d2s-spec-{mode}", harness.values(rng, (5, 28, 2, 3), np.float32), 2, mode))
        cases.append(_case(f"d2s-empty-batch-{mode}", np.zeros((0, 8, 2, 2), np.float32), 2, mode))
        cases.append(_case(f"d2s-empty-spatial-{mode}", np.zeros((1, 4, 0, 3), np.int32), 2, mode))
    f = np.ones((1, 8, 2, 2), np.float32)
    for name, x, attrs, label in [
        ("rank", np.ones((2, 4), np.float32), {"block_size": 2, "mode": "blocks_first"}, "data-rank"),
        ("block-zero", f, {"block_size": 0, "mode": "blocks_first"}, "block-size"),
        ("block-negative", f, {"block_size": -2, "mode": "depth_first"}, "block-size"),
        ("indivisible", f, {"block_size": 3, "mode": "depth_first"}, "depth-blocks"),
        ("indivisible-3d", np.ones((1, 4, 2, 2, 2), np.float32), {"block_size": 2, "mode": "depth_first"},
         "depth-blocks"),
        ("mode", f, {"block_size": 2, "mode": "columns_first"}, "attributes"),
        ("no-mode", f, {"block_size": 2}, "attributes"),
    ]:
        cases.append(Case(f"d2s-refuses-{name}", "DepthToSpace", "opset1", [Input("data", x)], attrs, error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_depth_to_space(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("type_name", ["DepthToSpace", "SpaceToDepth"])
def test_an_empty_input_with_a_block_size_past_numpy_is_made_directly(type_name):
    """The reshapes to [.., block_size, ..] would describe arrays numpy cannot hold; an empty
    output of a shape within reach is made directly, one past reach is refused with the limit."""
    from irscatter.errors import ExecutionError
    from irscatter.ops import registry
    from irscatter.ops.functional import make_op

    op = make_op(registry.resolve(type_name, "opset1").cls, {"block_size": 2**63 - 1, "mode": "depth_first"})
    out = op.compute(np.zeros((1, 0, 0, 0), np.float32))
    assert out.shape == (1, 0, 0, 0) and out.dtype == np.float32
    if type_name == "SpaceToDepth":  # blocks of 2 // block_size = 0: an empty output of small dims
        assert op.compute(np.zeros((0, 0, 2, 2, 2), np.float32)).shape == (0, 0, 0, 0, 0)
        return
    with pytest.raises(ExecutionError) as info:  # spatial dims of 2 * block_size: past numpy's reach
        op.compute(np.zeros((0, 0, 2, 2, 2), np.float32))
    assert info.value.label == "tensor-limit"
