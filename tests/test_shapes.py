import pytest

from irscatter.ir.shapes import Dimension, PartialShape, parse_partial_shape, parse_static_shape


@pytest.mark.parametrize(
    "text, dims",
    [("1,3,224,224", [(1, 1), (3, 3), (224, 224), (224, 224)]), ("[1, 3]", [(1, 1), (3, 3)]),
     ("?", [(0, None)]), ("-1,2", [(0, None), (2, 2)]), ("1..10", [(1, 10)]), ("..10", [(0, 10)]),
     ("2..", [(2, None)]), ("", [])],
)
def test_partial_shape_syntax(text, dims):
    shape = parse_partial_shape(text)
    assert [(d.min, d.max) for d in shape.dims] == dims


@pytest.mark.parametrize("text", ["...", "[...]"])
def test_dynamic_rank(text):
    assert parse_partial_shape(text).dims is None


@pytest.mark.parametrize("text", ["1,,3", "-2", "abc", "5..2", "1..x"])
def test_bad_shapes_are_refused(text):
    with pytest.raises(ValueError):
        parse_partial_shape(text)


def test_text_round_trip_and_json():
    shape = parse_partial_shape("1,?,2..,..8,3..5")
    assert shape.to_text() == "1,?,2..,..8,3..5"
    assert PartialShape.model_validate_json(shape.model_dump_json()) == shape
    assert Dimension.model_validate("3..5") == Dimension(min=3, max=5)


def test_compatibility_and_acceptance():
    shape = parse_partial_shape("2,?,1..4")
    assert shape.accepts((2, 100, 4)) and not shape.accepts((2, 1, 5)) and not shape.accepts((2, 1))
    assert shape.compatible(parse_partial_shape("2,3,?"))
    assert not shape.compatible(parse_partial_shape("3,3,3"))
    assert PartialShape.dynamic_rank().accepts((1, 2, 3, 4, 5))


def test_const_shape_syntax():
    assert parse_static_shape("1, 3, 1, 1") == (1, 3, 1, 1)
    assert parse_static_shape("") == ()
    with pytest.raises(ValueError):
        parse_static_shape("1,-1")
