"""Gather with indices 0, 1, ..., d - 1 along its axis (a stateful decoder's beam reordering of
one beam, over its whole KV cache at every step) gives its data as a view instead of a copy:
the same values, and the run's ownership rule keeps anyone from writing through the view into
the data, or into a caller's feed."""

import numpy as np
import pytest

import irscatter
from irscatter.ir.element_types import ElementType
from irscatter.ir.writer import IRWriter
from irscatter.ops.indexing.gather import gather_with_zero_fill

F32, I64 = ElementType.f32, ElementType.i64


@pytest.mark.parametrize("shape, axis", [((5,), 0), ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), 2), ((1, 2, 0, 3), 1)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.uint64])
def test_indices_in_order_give_the_data_as_a_view(shape, axis, dtype):
    data = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    data.flags.writeable = False  # (as a Const's or a state's value is)
    indices = np.arange(shape[axis], dtype=dtype)
    got = gather_with_zero_fill(data, indices, axis, 0, "indices")
    assert got.shape == data.shape and np.array_equal(got, np.take(data, indices.astype(np.int64), axis=axis))
    owner = data if data.base is None else data.base
    assert got is not data and got.base is owner and not got.flags.writeable


@pytest.mark.parametrize("indices", [[0, 1, 2, 2], [0, 1, 3, 2], [1, 2, 3, 0], [-4, -3, -2, -1], [0, 1, 2, 4]])
def test_other_indices_of_the_axis_length_still_gather(indices):
    """Same length, not in order (or counted from the end, or one outside: a zero row): a copy
    with Gather's values."""
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    got = gather_with_zero_fill(data, np.array(indices), 0, 0, "indices")
    want = np.array([data[i] if -4 <= i < 4 else np.zeros(3, np.float32) for i in indices])
    assert np.array_equal(got, want) and not np.shares_memory(got, data)


def _model(tmp_path):
    """x = a + a; g = Gather(x, 0..3, axis 0); s = ScatterUpdate(g, [1], u) (which may write
    into its input's buffer when nothing else holds it); outputs s + x, g, and Gather(a, 0..3)."""
    writer = IRWriter("t")
    a = writer.parameter("a", F32, (4, 3), ("a",))
    u = writer.parameter("u", F32, (1, 3), ("u",))
    order = writer.const("order", np.arange(4, dtype=np.int64))
    zero = writer.const("zero", np.array(0, np.int64))
    row = writer.const("row", np.array([1], np.int64))
    x, = writer.layer("Add", "opset1", [a, a], [(F32, (4, 3))] * 2, [(F32, (4, 3))], name="x",
                      attrs={"auto_broadcast": "numpy"})
    gather_types = [(F32, (4, 3)), (I64, (4,)), (I64, ())]
    g, = writer.layer("Gather", "opset8", [x, order, zero], gather_types, [(F32, (4, 3))], name="g",
                      attrs={"batch_dims": "0"})
    s, = writer.layer("ScatterUpdate", "opset3", [g, row, u, zero],
                      [(F32, (4, 3)), (I64, (1,)), (F32, (1, 3)), (I64, ())], [(F32, (4, 3))], name="s")
    total, = writer.layer("Add", "opset1", [s, x], [(F32, (4, 3))] * 2, [(F32, (4, 3))], name="total",
                          attrs={"auto_broadcast": "numpy"})
    fed, = writer.layer("Gather", "opset8", [a, order, zero], gather_types, [(F32, (4, 3))], name="fed",
                        attrs={"batch_dims": "0"})
    for name, tensor in (("total", total), ("g", g), ("fed", fed)):
        writer.result(name, tensor, F32, (4, 3))
    return writer.save(tmp_path / "model.xml")


def test_nothing_writes_through_the_view(tmp_path):
    compiled = irscatter.compile_model(_model(tmp_path))
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    u = np.full((1, 3), -100, np.float32)
    fed_a, fed_u = a.copy(), u.copy()
    for _ in range(2):  # (the second run may take the first's buffers back)
        outputs = compiled.run({"a": fed_a, "u": fed_u})
        total, g, fed = outputs[0], outputs[1], outputs[2]
        x = 2 * a
        scattered = x.copy()
        scattered[1] = u[0]
        assert np.array_equal(total, scattered + x)  # x's row 1 was not overwritten by the scatter
        assert np.array_equal(g, x) and np.array_equal(fed, a)
        assert np.array_equal(fed_a, a) and np.array_equal(fed_u, u)
        assert not np.shares_memory(fed, fed_a)  # an output never views a feed
