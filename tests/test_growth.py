"""A variable's Concat grows in a buffer with room (irscatter/ops/common/growth.py): np.concatenate's
values, read-only views whose contents never change, and a copy wherever a view is not the
longest of its buffer. A stateful model runs with the same outputs and states either way."""

import gc
from pathlib import Path

import numpy as np
import pytest

import irscatter
from irscatter import limits
from irscatter.ops.common import growth
from irscatter.ops.movement.concat import Concat

DECODER = Path(__file__).resolve().parents[1] / "models" / "stateful_decoder"


@pytest.mark.parametrize("shape, axis", [((0,), 0), ((3,), 0), ((1, 2, 5, 4), 2), ((2, 3, 4), 0), ((2, 3, 4), 2)])
def test_appends_keep_every_view_as_it_was(shape, axis):
    generator = np.random.default_rng(len(shape) + axis)
    first = generator.standard_normal(shape).astype(np.float32)
    step = list(shape)
    step[axis] = 1
    views, want = [], first
    view = growth.grown(first, first[tuple(slice(0, 0) if d == axis else slice(None) for d in range(len(shape)))], axis)
    for _ in range(80):  # past the first buffer's room: it grows into another
        new = generator.standard_normal(step).astype(np.float32)
        joined = growth.appended(view, new, axis)
        view = joined if joined is not None else growth.grown(view, new, axis)
        want = np.concatenate([want, new], axis=axis)
        assert np.array_equal(view, want) and not view.flags.writeable and growth.holds(view)
        views.append((view, want))
    assert all(np.array_equal(v, w) for v, w in views)  # no append wrote where an earlier view looks


def test_a_view_that_is_not_the_longest_does_not_append():
    """Two steps from one earlier value (a variable set back): the second finds the room taken
    and is refused, so the first's view keeps its rows."""
    start = growth.grown(np.zeros((2, 3), np.float32), np.ones((1, 3), np.float32), 0)
    one = growth.appended(start, np.full((1, 3), 2, np.float32), 0)
    assert one is not None and growth.appended(start, np.full((1, 3), 3, np.float32), 0) is None
    assert growth.appended(one[:2], np.full((1, 3), 3, np.float32), 0) is None  # (a shorter view of it)
    assert np.array_equal(one, [[0, 0, 0], [0, 0, 0], [1, 1, 1], [2, 2, 2]])


@pytest.mark.parametrize("second", [np.ones((1, 4), np.float32), np.ones((1, 3), np.float64), np.ones(3, np.float32)])
def test_parts_that_do_not_join_alone_are_left_to_concatenate(second):
    first = growth.grown(np.zeros((2, 3), np.float32), np.ones((1, 3), np.float32), 0)
    assert growth.appended(first, second, 0) is None and growth.grown(first, second, 0) is None


def test_no_room_past_the_limits():
    """A buffer whose room would pass the limit on a tensor's size is not made (the plain join
    then makes the result alone, within the limit)."""
    with limits.using(tensor_bytes=200):
        assert growth.grown(np.zeros((4, 3), np.float32), np.ones((1, 3), np.float32), 0) is None
    assert growth.grown(np.zeros((4, 3), np.float32), np.ones((1, 3), np.float32), 0) is not None


def test_a_freed_buffer_is_forgotten():
    view = growth.grown(np.zeros((2, 3), np.float32), np.ones((1, 3), np.float32), 0)
    key = id(view.base)
    assert key in growth._buffers
    del view
    gc.collect()
    assert key not in growth._buffers


def test_writable_arrays_are_not_held():
    array = np.zeros((2, 3), np.float32)
    assert not growth.holds(array) and not growth.holds(array[:1])


def _steps(compiled, feeds) -> list[bytes]:
    """The outputs of the decoder's four steps and its states after them, as bytes."""
    seen = []
    for k in range(4):
        seen += [out.tobytes() for out in compiled.run({"x": feeds[f"step{k}/x"]}).values()]
        seen += [state.state.tobytes() for state in compiled.query_state()]
    return seen


def test_the_stateful_decoder_runs_as_with_copies(monkeypatch):
    feeds = dict(np.load(DECODER / "inputs.npz"))
    growing = irscatter.compile_model(DECODER / "model.xml")
    marked = [step.compute.__self__ for step in growing.plan.steps
              if isinstance(getattr(step.compute, "__self__", None), Concat) and step.compute.__self__.grows]
    assert len(marked) == 2
    monkeypatch.setattr("irscatter.runtime.plan._mark_growing_caches", lambda steps, ops, producers: None)
    copying = irscatter.compile_model(DECODER / "model.xml")
    want = _steps(copying, feeds)
    assert _steps(growing, feeds) == want
    growing.reset_state()
    assert _steps(growing, feeds) == want
    # the states after two steps set back, then the last two steps again: the same outputs
    growing.reset_state()
    for k in range(2):
        growing.run({"x": feeds[f"step{k}/x"]})
    saved = [state.state for state in growing.query_state()]
    first = [growing.run({"x": feeds[f"step{k}/x"]})[0].tobytes() for k in (2, 3)]
    for state, value in zip(growing.query_state(), saved):
        state.set_state(value)
    assert [growing.run({"x": feeds[f"step{k}/x"]})[0].tobytes() for k in (2, 3)] == first
