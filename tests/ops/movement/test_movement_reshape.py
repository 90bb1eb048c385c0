"""Reshape's pattern checks when the input's shape is not known (inference cannot resolve the
pattern against sizes, so it checks what needs none); the kernels and the known-shape rules are
covered with the other glue ops against OpenVINO in `tests/ops/test_glue_openvino.py`."""

import numpy as np
import pytest

from irscatter.errors import ValidationError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import make_op
from irscatter.ops.movement.reshape import Reshape

DYNAMIC = TensorInfo(ElementType.f32, PartialShape.of([1, -1, 64]))


@pytest.mark.parametrize("pattern, special_zero, message", [
    ([0, -5, 4, 16], True, "below -1"),
    ([-1, 4, -1], False, "at most one"),
    ([0, 0, 0, 0], True, "past the input's rank"),
])
def test_a_pattern_wrong_whatever_the_sizes_is_refused_for_an_input_of_unknown_shape(pattern, special_zero, message):
    op = make_op(Reshape, {"special_zero": special_zero})
    with pytest.raises(ValidationError, match=message) as info:
        op.infer(DYNAMIC, TensorInfo.of(np.array(pattern, np.int64)))
    assert info.value.label == "reshape-pattern"


def test_a_sound_pattern_keeps_what_it_knows():
    op = make_op(Reshape, {"special_zero": True})
    out = op.infer(DYNAMIC, TensorInfo.of(np.array([0, -1, 4, 16], np.int64)))
    assert str(out.shape) == str(PartialShape.of([1, -1, 4, 16]))


def test_a_special_zero_on_an_input_of_unknown_rank_copies_an_unknown_dimension():
    op = make_op(Reshape, {"special_zero": True})
    unknown = TensorInfo(ElementType.f32, PartialShape.dynamic_rank())
    out = op.infer(unknown, TensorInfo.of(np.array([1, 0, 2], np.int64)))
    assert str(out.shape) == str(PartialShape.of([1, -1, 2]))  # not a literal 0

