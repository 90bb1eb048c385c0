"""Split-1 against OpenVINO's CPU plugin and `oracles.movement.split`; exact (the parts are
copies of data's elements).

Covered: ranks 1 to 5, size-0 dims (an empty axis splits into empty parts, as in OpenVINO),
every element type, negative axes, axes of i32/i64/u8, an axis fed at run time, and the
inference of shapes (and values, for ShapeOf chains) from what is known.
"""

import functools

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.movement import split

from irscatter.checks.infer import infer_layer
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op
from irscatter.ops.movement.concat import Concat
from irscatter.ops.movement.split import Split

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "boolean")


WHY = {"f64": "the CPU plugin moves f64 as f32", "i64": "the CPU plugin moves i64 as i32 (the extremes)"}


def _case(tag, data, axis, n, *, axis_type=np.int64, axis_const=True, **extra):
    return Case(f"{tag}-{'x'.join(map(str, data.shape))}-axis{axis}-n{n}", "Split", "opset1",
                [Input("data", data), Input("axis", np.array(axis, axis_type), const=axis_const)],
                {"num_splits": n}, oracle=functools.partial(split, num_splits=n), **extra)


def _cases():
    rng = np.random.default_rng(17)
    cases = []
    for tag, dtype in TYPES.items():
        for shape in harness.shapes(rng, ranks=(1, 2, 3, 4, 5)):
            rank = len(shape)
            axis = int(rng.integers(-rank, rank))
            dim = shape[axis]
            n = int(rng.choice([d for d in range(1, 5) if dim % d == 0]))
            data = harness.values(rng, shape, dtype, edges=True, **({"low": -100, "high": 100} if tag[0] in "iu" else {}))
            extra = {"openvino": "reference", "why": WHY[tag]} if tag in WHY else {}
            cases.append(_case(tag, data, axis, n, **extra))
    x = np.arange(6 * 12 * 2, dtype=np.float32).reshape(6, 12, 2)
    cases += [
        _case("example", x, 1, 3),
        _case("one-part", x, 0, 1),
        _case("every-element", x, 1, 12),
        _case("axis-i32", x, -2, 4, axis_type=np.int32),
        _case("axis-u8", x, 0, 2, axis_type=np.uint8),
        _case("axis-at-runtime", x, -1, 2, axis_const=False),
        _case("empty-axis", np.zeros((2, 0, 3), np.float32), 1, 3),
        _case("i64-extremes", np.array([[2**63 - 1, -(2**63)], [0, -1]], np.int64), 1, 2,
              openvino="reference", why="the CPU plugin moves i64 as i32"),
    ]
    f32 = np.ones((4, 6), np.float32)
    cases += [
        _case("indivisible", f32, 1, 4, error="split-count"),
        _case("zero-splits", f32, 1, 0, error="split-count"),
        _case("indivisible-at-runtime", f32, 1, 4, axis_const=False, error="split-count"),
        _case("axis-range", f32, 2, 2, error="axis-range"),
        _case("scalar-data", np.float32(1).reshape(()), 0, 1, error="axis-range"),
        Case("axis-shape", "Split", "opset1", [Input("data", f32), Input("axis", np.array([1]), const=True)],
             {"num_splits": 2}, error="axis-shape"),
        Case("axis-type", "Split", "opset1", [Input("data", f32), Input("axis", np.array(1, np.float32), const=True)],
             {"num_splits": 2}, error="axis-type"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_split(case):
    harness.check(case, CASES)


def _infer(op, *infos):
    return infer_layer(op, list(infos))


def test_a_shape_of_split_concat_chain_folds():
    shape = TensorInfo.of(np.array([2, 3, 4], np.int64))
    parts = _infer(make_op(Split, {"num_splits": 3}), shape, TensorInfo.of(np.array(0, np.int64)))
    assert [p.value.tolist() for p in parts] == [[2], [3], [4]]
    (joined,) = _infer(make_op(Concat, {"axis": 0}), parts[2], parts[0])
    assert joined.value.tolist() == [4, 2]


def test_unknown_values_give_dynamic_dims():
    data = TensorInfo(ElementType.f32, PartialShape.of([4, -1, 6]))
    axis = TensorInfo(ElementType.i64, PartialShape.of([]))
    split = make_op(Split, {"num_splits": 2})
    assert [str(p.shape) for p in split.infer(data, axis)] == ["[?, ?, ?]"] * 2
    known = TensorInfo.of(np.array(-1, np.int64))
    assert [str(p.shape) for p in split.infer(data, known)] == ["[4, ?, 3]"] * 2
    assert [str(p.shape) for p in split.infer(TensorInfo(ElementType.f32, PartialShape.of([4, -1, 6])),
                                              TensorInfo.of(np.array(1)))] == ["[4, ?, 6]"] * 2
    assert split.infer(TensorInfo(ElementType.f32, PartialShape.dynamic_rank()), known)[0].shape.rank_is_static is False


def test_the_layer_must_declare_num_splits_outputs(tmp_path):
    from helpers import layer, net, param, port, result, write

    import irscatter

    layers = [param(0, "data", [4, 6]), param(1, "axis", [], et="i64", precision="I64"),
              layer(2, "split", "Split", data={"num_splits": "2"}, inputs=[port(0, "FP32", [4, 6]), port(1, "I64", [])],
                    outputs=[port(2, "FP32", [4, 2]), port(3, "FP32", [4, 2]), port(4, "FP32", [4, 2])]),
              result(3, "r0", [4, 2]), result(4, "r1", [4, 2]), result(5, "r2", [4, 2])]
    xml = write(tmp_path, net(layers, [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0), (2, 3, 4, 0), (2, 4, 5, 0)]))
    with pytest.raises(irscatter.IRError) as caught:
        irscatter.read_model(xml).compile()
    assert caught.value.label == "output-count"
