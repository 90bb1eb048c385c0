"""Tile-1 against OpenVINO's CPU plugin and `oracles.movement.tile`; exact (the output copies
data's elements).

Covered: ranks 0 to 5, size-0 dims, repeats shorter, as long as and longer than the rank
(the spec's promotions), repeats of 0 and negative repeats (read as 0, as OpenVINO does),
every element type, i32/i64/u8 repeats, repeats fed at run time, and the tensor limit on the
output a repeats value asks for.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.movement import tile

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op
from irscatter.ops.movement.tile import Tile

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "boolean")
WHY = {"f64": "the CPU plugin moves f64 as f32", "i64": "the CPU plugin moves i64 as i32 (the extremes)"}


def _case(tag, data, repeats, *, repeats_type=np.int64, const=True, **extra):
    return Case(f"{tag}-{'x'.join(map(str, data.shape))}-r{'_'.join(map(str, repeats))}", "Tile", "opset1",
                [Input("data", data), Input("repeats", np.array(repeats, repeats_type).reshape(-1), const=const)],
                oracle=tile, **extra)


def _cases():
    rng = np.random.default_rng(19)
    cases = []
    for tag, dtype in TYPES.items():
        for shape in harness.shapes(rng, ranks=(0, 1, 2, 3, 4), max_dim=3):
            n = max(len(shape) + int(rng.integers(-1, 2)), 1)  # shorter, as long, longer
            repeats = [int(r) for r in rng.integers(0, 4, n)]
            data = harness.values(rng, shape, dtype, edges=True, **({"low": -100, "high": 100} if tag[0] in "iu" else {}))
            extra = {"openvino": "reference", "why": WHY[tag]} if tag in WHY else {}
            if extra and data.size == 0:
                extra = {"openvino": "none", "why": WHY[tag] + "; the core reference crashes on empty data"}
            cases.append(_case(tag, data, repeats, **extra))
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cases += [
        _case("example-1", x, [1, 2, 3]),
        _case("example-2", x, [5, 1, 2, 3]),
        _case("example-3", x.reshape(1, 2, 3, 4), [1, 2, 3]),
        _case("rank-5", np.arange(6, dtype=np.float32).reshape(1, 2, 1, 3, 1), [2, 1, 3, 1, 2]),
        _case("scalar", np.float32(7).reshape(()), [2, 3]),
        _case("negative", x, [1, -1, 2]),
        _case("no-repeats", x, [], openvino="none", why="OpenVINO cannot make an empty i64 Const for the test IR"),
        _case("i32", x, [2, 1, 1], repeats_type=np.int32),
        _case("u8", x, [1, 2], repeats_type=np.uint8),
        _case("at-runtime", x, [2, 2], const=False),
        _case("negative-at-runtime", x, [2, -3, 1], const=False),
    ]
    cases += [
        _case("huge", x, [2**40, 2**40], error="tensor-limit"),
        _case("huge-at-runtime", x, [2**40, 2**40], const=False, error="tensor-limit"),
        Case("repeats-scalar", "Tile", "opset1", [Input("data", x), Input("repeats", np.array(2), const=True)],
             error="repeats-rank"),
        Case("repeats-type", "Tile", "opset1", [Input("data", x), Input("repeats", np.array([2.0], np.float32), const=True)],
             error="repeats-type"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_tile(case):
    harness.check(case, CASES)


def test_what_inference_knows():
    op = make_op(Tile, {})
    data = TensorInfo(ElementType.f32, PartialShape.of([2, -1, 3]))
    shape = lambda repeats: str(op.infer(data, TensorInfo.of(np.array(repeats))).shape)  # noqa: E731
    assert shape([4, 1, 0, 2]) == "[4, 2, 0, 6]"
    assert shape([2, 2]) == "[2, ?, 6]"
    assert shape([1, 0, 1]) == "[2, 0, 3]"
    unknown = TensorInfo(ElementType.i64, PartialShape.of([4]))
    assert str(op.infer(data, unknown).shape) == "[?, ?, ?, ?]"


def test_a_zero_repeat_makes_an_empty_output_without_tiling_the_other_axes():
    """np.tile would first repeat the other axes 10000 x 10000 times (1.6 GB here) before the
    zero repeat empties the result: the limit holds for the output, so the kernel makes it
    directly."""
    from irscatter import limits
    from irscatter.ops.functional import call

    with limits.using(tensor_bytes=1_000_000):
        out = call(Tile, [np.zeros(4, np.float32), np.array([10000, 10000, 0], np.int64)], {})
    assert out.shape == (10000, 10000, 0) and out.dtype == np.float32
