"""The one run context kernels read (`ops/context.py`), and the observers of a watched run
(`runtime/observers.py`)."""

import contextvars
import dataclasses
import threading

import numpy as np
import pytest
from helpers import add, net, param, result, write

import irscatter
from irscatter.ops import context
from irscatter.ops.common import accel, recycle, strict
from irscatter.ops.state import core as state
from irscatter.runtime.decompression import asked_decompression, decompressing
from irscatter.runtime.precision import emulated_precision, emulating

EMPTY = context.RunContext()


def _chain(tmp_path, n=3):
    """x -> Add(x, x) -> ... n times -> Result."""
    layers = [param(0, "x", [2, 2])] + [add(i, f"a{i}", [2, 2]) for i in range(1, n + 1)] + [result(n + 1, "out", [2, 2])]
    edges = [(0, 0, 1, 0), (0, 0, 1, 1)]
    for i in range(2, n + 1):
        edges += [(i - 1, 2, i, 0), (i - 1, 2, i, 1)]
    edges.append((n, 2, n + 1, 0))
    return irscatter.read_model(write(tmp_path, net(layers, edges))).compile()


def test_using_changes_fields_for_a_block_only():
    assert context.current() == EMPTY
    with context.using(backend="numpy", precision="f16") as outer:
        assert context.current() is outer and outer.backend == "numpy"
        with context.using(precision=None):
            assert context.current() == dataclasses.replace(EMPTY, backend="numpy")
        assert context.current() is outer
    assert context.current() == EMPTY
    with pytest.raises(TypeError, match="no field 'colour'"), context.using(colour="red"):
        pass
    with pytest.raises(dataclasses.FrozenInstanceError):
        outer.backend = "numba"  # type: ignore[misc]


def test_each_former_switch_reads_and_writes_the_one_context():
    collector, store, recycler = strict.Collector(), state.Variables(), recycle.Recycler()
    with strict.collecting(collector), accel.use("numpy"), emulating("bf16"), decompressing("f32"), \
            state.using(store), recycle.recycling(recycler):
        assert context.current() == context.RunContext(recycler=recycler, backend="numpy", strict=collector,
                                                       variables=store, precision="bf16", decompression="f32")
        assert strict.active() and strict.collector() is collector and accel.mode() == "numpy"
        assert emulated_precision() == "bf16" and asked_decompression() == "f32" and state.current() is store
        with strict.collecting(None):
            assert not strict.active() and accel.mode() == "numpy"
    assert context.current() == EMPTY


def test_a_thread_starts_from_the_empty_context_unless_it_is_handed_one():
    seen = []
    with strict.collecting(strict.Collector()):
        thread = threading.Thread(target=lambda: seen.append(strict.active()))
        thread.start()
        thread.join()
        seen.append(contextvars.copy_context().run(strict.active))
    assert seen == [False, True]


def test_a_run_hands_its_context_to_what_it_calls_and_leaves_none_behind(tmp_path):
    compiled = _chain(tmp_path)
    seen = []
    compiled.run({"x": np.ones((2, 2), np.float32)}, hook=lambda layer, ins, outs: seen.append(context.current()))
    assert len(seen) == 3 and all(c is seen[0] for c in seen)
    assert seen[0].recycler is compiled._recycler and seen[0].variables is compiled.variables
    assert seen[0].iterations is not None and seen[0].observer is not None
    assert context.current() == EMPTY

    def failing(layer, ins, outs):
        raise RuntimeError("stop")
    with pytest.raises(RuntimeError):
        compiled.run({"x": np.ones((2, 2), np.float32)}, hook=failing, strict=True, precision="f16")
    assert context.current() == EMPTY


def test_every_observer_at_once_does_what_each_does_alone(tmp_path):
    compiled = _chain(tmp_path)
    x = np.full((2, 2), 1 + 2.0 ** -12, np.float32)  # f16 rounds it, and every sum after it, to a power of 2
    timings, shown = [], []

    def hook(layer, ins, outs):
        assert not outs[0].flags.writeable
        shown.append((layer.name, outs[0].copy()))
    out = compiled.run({"x": x}, hook=hook, timings=timings, strict=True, precision="f16", intermediate=True)
    assert [layer.name for layer, _, _ in timings] == [name for name, _ in shown] == ["a1", "a2", "a3"]
    assert all(seconds >= 0 and in_place is False for _, seconds, in_place in timings)
    for name, value in shown:  # the hook sees outputs rounded, as the record keeps them
        assert np.array_equal(value, out[f"{name}:2"]) and np.array_equal(value, value.astype(np.float16))
    assert np.array_equal(out["a3:2"], compiled.run({"x": x}, precision="f16")["out"])
    assert out.findings == [] and out["a3:2"][0, 0] == 8


def test_observers_are_joined_first_around_last_and_only_what_they_override_is_called():
    from irscatter.runtime.observers import Around, StepObserver, Timing

    calls = []

    class Named(StepObserver):
        __slots__ = ("name",)

        def __init__(self, name):
            self.name = name

        def before(self, step, args):
            calls.append(f"before {self.name}")
            return [*args, self.name]

        def after(self, step, args, out):
            calls.append(f"after {self.name}")
            return out + self.name

    class Finishing(StepObserver):
        def finish(self, values):
            calls.append("finish")

    around = Around([Named("a"), Finishing(), Named("b")])
    assert around.start is None and around.call is None and around.finish.__self__.__class__ is Finishing
    assert around.before(None, []) == ["a", "b"] and around.after(None, [], "") == "ba"
    assert calls == ["before a", "before b", "after b", "after a"]
    assert Named.overrides == {"before", "after"} and Timing.overrides == {"call"}
    with pytest.raises(ValueError, match="one observer"):
        Around([Timing([]), Timing([])])
