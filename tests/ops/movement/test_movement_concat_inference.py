"""Concat-1's inference: every dimension but the axis must agree across the inputs (dynamic
dimensions agree with any), the ranks must be one, and the message of a refusal names the
input and the dimension that differ."""

import pytest

from irscatter.checks.infer import infer_layer
from irscatter.errors import ValidationError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op
from irscatter.ops.movement.concat import Concat


def _concat(axis, *shapes):
    infos = [TensorInfo(ElementType.f32, PartialShape.of(shape) if shape is not None else PartialShape.dynamic_rank())
             for shape in shapes]
    (out,) = infer_layer(make_op(Concat, {"axis": axis}), infos)
    return out.shape


def test_many_inputs_join_along_the_axis():
    parts = [(1, 32, 56, 56)] + [(1, 32 * (i + 1), 56, 56) for i in range(40)]
    assert _concat(1, *parts) == PartialShape.of((1, 32 + 32 * sum(range(1, 41)), 56, 56))


def test_dynamic_dimensions_agree_with_any_and_make_the_axis_dynamic():
    assert _concat(-1, (-1, 3, 2), (4, -1, 5)) == PartialShape.of((-1, 3, 7))
    assert _concat(0, (-1, 3), (2, 3)) == PartialShape.of((-1, 3))
    assert _concat(0, None, (2, 3)) == PartialShape.of((-1, 3))


@pytest.mark.parametrize("shapes, label, message", [
    ([(2, 3), (2, 3), (2, 4)], "concat-shape", r"input 2.*dimension 1 must match across inputs \(4 vs 3\)"),
    ([(2, 3, 1), (2, 3, 1), (2, 3, 2)], "concat-shape", r"dimension 2 must match .* \(2 vs 1\)"),
    ([(2, 3), (2, 3, 1)], "concat-rank", r"input 1.*every input must have rank 2, input 1 has \[2, 3, 1\]"),
])
def test_a_refusal_names_the_input_and_the_dimension(shapes, label, message):
    with pytest.raises(ValidationError) as caught:
        _concat(0, *shapes)
    assert caught.value.label == label
    assert caught.match(message)
