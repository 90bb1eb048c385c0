"""VariadicSplit-1 against OpenVINO's CPU plugin and `oracles.movement.variadic_split`; exact
(the parts are copies of data's elements).

Covered: ranks 1 to 5, size-0 dims and parts of length 0, a -1 length (also resolving to 0),
every element type, negative axes, a [1]-shaped axis, i32/i64 axis and lengths, inputs fed at
run time, and the refusals of the lengths' rules.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.movement import variadic_split

from irscatter.checks.infer import infer_layer
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op
from irscatter.ops.movement.variadic_split import VariadicSplit

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "boolean")
WHY = {"f64": "the CPU plugin moves f64 as f32", "i64": "the CPU plugin moves i64 as i32 (the extremes)"}


def _case(tag, data, axis, lengths, *, index_type=np.int64, const=True, **extra):
    return Case(f"{tag}-{'x'.join(map(str, data.shape))}-axis{axis}-{'_'.join(map(str, lengths))}", "VariadicSplit",
                "opset1", [Input("data", data), Input("axis", np.array(axis, index_type), const=const),
                           Input("split_lengths", np.array(lengths, index_type), const=const)],
                oracle=variadic_split, **extra)


def _random_lengths(rng, dim):
    cuts = sorted(int(c) for c in rng.integers(0, dim + 1, int(rng.integers(0, 3))))
    lengths = [b - a for a, b in zip([0, *cuts], [*cuts, dim])]
    if rng.random() < 0.5:
        lengths[int(rng.integers(0, len(lengths)))] = -1
    return lengths


def _cases():
    rng = np.random.default_rng(18)
    cases = []
    for tag, dtype in TYPES.items():
        for shape in harness.shapes(rng, ranks=(1, 2, 3, 4, 5)):
            rank = len(shape)
            axis = int(rng.integers(-rank, rank))
            data = harness.values(rng, shape, dtype, edges=True, **({"low": -100, "high": 100} if tag[0] in "iu" else {}))
            extra = {"openvino": "reference", "why": WHY[tag]} if tag in WHY else {}
            cases.append(_case(tag, data, axis, _random_lengths(rng, shape[axis]), **extra))
    x = np.arange(6 * 12, dtype=np.float32).reshape(6, 12)
    cases += [
        _case("example-1", x, 0, [1, 2, 3]),
        _case("example-2", x, 0, [-1, 2]),
        _case("minus-one-is-zero", x, 1, [12, -1]),
        _case("zero-parts", x, -1, [0, 5, 0, 7]),
        _case("one-part", x, 1, [-1]),
        _case("i32", x, -1, [4, 8], index_type=np.int32),
        Case("axis-1-elem-i32-lengths-i64", "VariadicSplit", "opset1",
             [Input("data", x), Input("axis", np.array([1], np.int32), const=True),
              Input("split_lengths", np.array([3, -1], np.int64), const=True)], oracle=variadic_split),
        _case("at-runtime", x, 1, [5, -1, 3], const=False),
        _case("empty-axis", np.zeros((3, 0), np.float32), 1, [0, -1, 0]),
    ]
    cases += [
        _case("sum-short", x, 1, [5, 5], error="split-lengths"),
        _case("sum-long", x, 1, [5, 8], error="split-lengths"),
        _case("two-minus-ones", x, 1, [-1, -1], error="split-lengths"),
        _case("below-minus-one", x, 1, [-2, 14], error="split-lengths"),
        _case("minus-one-overdrawn", x, 1, [13, -1], error="split-lengths"),
        _case("sum-at-runtime", x, 1, [5, 5], const=False, error="split-lengths"),
        _case("axis-range", x, 2, [6], error="axis-range"),
        Case("lengths-scalar", "VariadicSplit", "opset1",
             [Input("data", x), Input("axis", np.array(1), const=True), Input("split_lengths", np.array(12), const=True)],
             error="split_lengths-shape"),
        Case("lengths-type", "VariadicSplit", "opset1",
             [Input("data", x), Input("axis", np.array(1), const=True),
              Input("split_lengths", np.array([12.0], np.float32), const=True)], error="split_lengths-type"),
        Case("axis-type", "VariadicSplit", "opset1",
             [Input("data", x), Input("axis", np.array(1.0, np.float32), const=True),
              Input("split_lengths", np.array([12]), const=True)], error="axis-type"),
        Case("axis-shape", "VariadicSplit", "opset1",
             [Input("data", x), Input("axis", np.array([0, 1]), const=True),
              Input("split_lengths", np.array([12]), const=True)], error="axis-shape"),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_variadic_split(case):
    harness.check(case, CASES)


def test_what_inference_knows():
    op = make_op(VariadicSplit, {})
    data = TensorInfo(ElementType.f32, PartialShape.of([6, -1]))
    axis = TensorInfo.of(np.array(-1))
    parts = op.infer(data, axis, TensorInfo.of(np.array([2, -1, 3])))
    assert [str(p.shape) for p in parts] == ["[6, 2]", "[6, ?]", "[6, 3]"]
    unknown = TensorInfo(ElementType.i64, PartialShape.of([2]))
    assert [str(p.shape) for p in op.infer(data, axis, unknown)] == ["[6, ?]"] * 2
    values = infer_layer(op, [TensorInfo.of(np.array([7, 8, 9])), TensorInfo.of(np.array(0)),
                              TensorInfo.of(np.array([-1, 1]))])
    assert [v.value.tolist() for v in values] == [[7, 8], [9]]


def test_the_layer_must_declare_one_output_per_length(tmp_path):
    from helpers import layer, net, param, port, result, write

    import irscatter

    layers = [param(0, "data", [4, 6]), param(1, "axis", [], et="i64", precision="I64"),
              param(2, "lengths", [3], et="i64", precision="I64"),
              layer(3, "split", "VariadicSplit", inputs=[port(0, "FP32", [4, 6]), port(1, "I64", []), port(2, "I64", [3])],
                    outputs=[port(3, "FP32", [4, -1]), port(4, "FP32", [4, -1])]),
              result(4, "r0", [4, -1]), result(5, "r1", [4, -1])]
    xml = write(tmp_path, net(layers, [(0, 0, 3, 0), (1, 0, 3, 1), (2, 0, 3, 2), (3, 3, 4, 0), (3, 4, 5, 0)]))
    with pytest.raises(irscatter.IRError) as caught:
        irscatter.read_model(xml).compile()
    assert caught.value.label == "split_lengths-shape"
