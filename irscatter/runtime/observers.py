"""What watches a run, as observers around each step of the interpreter's watched loop.

A run that something watches (a hook, a record of values, timings, strict mode, precision
emulation) runs its steps in one loop (`CompiledModel._watched`). For each step it calls the
observers' `before` in order, the kernel (through the observer's `call` if one times it), then
their `after` in the reverse order, so that the first observer's work surrounds all the others'.
`start` is called in order once the inputs and Consts are in their slots, and `finish` in
reverse order once every step has run. The run builds its list
(`CompiledModel._step_observers`) in this order:

    Hook, Record, Rounding, Strict, Timing

so outputs are rounded before the hook sees them, and the record is read after the model's
outputs are rounded. Timing calls the kernel itself (`call`), which is how it times the call
alone, in one Python call per step. A run nothing watches has no observer and takes the plain
loop, which does nothing but call the kernels.

Each observer says what it needs of the run: `sees_values` (every layer runs, none is read
from the values kept for Const-only layers), `holds_arguments` (no kernel may write into an
input's buffer or leave an output out, since the observer may still hold or read them after
the step), `keeps_values` (no slot is freed during the run) and `alters_values` (it may change
an argument or an output: a compressed weight's product then multiplies the weight it is given,
`runtime/compressed.py`). What needs a different list of
steps (decompression, `runtime/decompression.py`) is a choice of steps, not an observer.

The loop pays a Python call per step for each method an observer overrides, and nothing for
the others (`Around`): on a model of many small layers that call is what a watched run costs
beyond the plain one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from irscatter.ir.graph import Layer
from irscatter.ops.common.strict import Collector
from irscatter.runtime.plan import Step
from irscatter.runtime.precision import RoundingPlan

_clock = time.perf_counter

LayerHook = Callable[[Layer, tuple[np.ndarray, ...], tuple[np.ndarray, ...]], None]


class StepObserver:
    """Work around each step of a watched run. Every method does nothing here; the loop calls
    only the ones a subclass overrides."""

    __slots__ = ()
    sees_values = True
    holds_arguments = False
    keeps_values = False
    alters_values = True  # whether `before` or `after` may change a value (unless told otherwise)
    overrides: frozenset[str] = frozenset()  # which of the methods below the class overrides

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.overrides = frozenset(name for name in _METHODS if getattr(cls, name) is not getattr(StepObserver, name))

    def start(self, values: list[Any]) -> None:
        """The run's inputs and Consts are in `values`; no step has run yet."""

    def before(self, step: Step, args: list[Any]) -> list[Any]:
        """`step`'s kernel is about to be called on `args`; returns the arguments to call it
        with."""
        return args

    def call(self, step: Step, args: list[Any], keywords: dict[str, Any]) -> Any:
        """Calls `step`'s kernel, for an observer that must be there when it runs (one per run,
        and it may raise nothing but what the kernel raises)."""
        return step.compute(*args, **keywords)

    def after(self, step: Step, args: list[Any], out: Any) -> Any:
        """`step`'s kernel returned `out` (a tuple for several outputs); returns what the run
        stores in the step's output slots."""
        return out

    def finish(self, values: list[Any]) -> None:
        """Every step has run; `values` holds the slots the run has not freed."""


_METHODS = ("start", "before", "call", "after", "finish")


class Around:
    """The observers of a run as the loop calls them: per step at most one `before`, `call`
    and `after` (None where no observer does anything), each doing every observer's work, and
    what the observers allow the run (`reuse_allowed`: kernels may write into an input's buffer
    or leave outputs out; `release`: slots are freed after their last reader). Made once per
    watched run, in one pass over the observers."""

    __slots__ = ("after", "before", "call", "finish", "release", "reuse_allowed", "start")

    def __init__(self, observers: Sequence[StepObserver]) -> None:
        found: dict[str, list[Callable[..., Any]]] = {name: [] for name in _METHODS}
        self.reuse_allowed = self.release = True
        for observer in observers:  # one pass, no generator: bodies make one of these per iteration
            for name in observer.overrides:
                found[name].append(getattr(observer, name))
            self.reuse_allowed &= not observer.holds_arguments
            self.release &= not observer.keeps_values
        if len(found["call"]) > 1:
            raise ValueError("only one observer of a run may call the kernels")
        self.start, self.finish = _each(found["start"]), _each(found["finish"][::-1])
        self.before, self.after = _threaded(found["before"]), _threaded(found["after"][::-1])
        self.call = found["call"][0] if found["call"] else None


def _threaded(methods: list[Callable[..., Any]]) -> Callable[..., Any] | None:
    """One callable for `methods` called in turn, each given what the one before returned as its
    last argument (the arguments, or the outputs); the method itself when there is one."""
    if len(methods) < 2:
        return methods[0] if methods else None

    def each(step: Step, *rest: Any) -> Any:
        *given, value = rest
        for method in methods:
            value = method(step, *given, value)
        return value
    return each


def _each(methods: list[Callable[[list[Any]], None]]) -> Callable[[list[Any]], None] | None:
    if len(methods) < 2:
        return methods[0] if methods else None

    def each(values: list[Any]) -> None:
        for method in methods:
            method(values)
    return each


class Hook(StepObserver):
    """The user's hook, called after each layer with read-only views of its inputs and outputs."""

    __slots__ = ("hook",)
    alters_values = False
    holds_arguments = True  # a hook may keep what it is shown

    def __init__(self, hook: LayerHook) -> None:
        self.hook = hook

    def after(self, step: Step, args: list[Any], out: Any) -> Any:
        outputs = out if isinstance(out, tuple) else (out,) if step.outputs else ()
        self.hook(step.layer, tuple(map(read_only, args)), tuple(map(read_only, outputs[:len(step.outputs)])))
        return out


class Record(StepObserver):
    """The record of every value a run computes (`run(intermediate=True)`, and the bodies of a
    watched run), read once the run is over: no slot is freed nor written into meanwhile."""

    __slots__ = ("into", "recorded")
    alters_values = False
    holds_arguments = True
    keeps_values = True

    def __init__(self, into: dict[str, np.ndarray], recorded: Callable[[list[Any]], dict[str, np.ndarray]]) -> None:
        self.into, self.recorded = into, recorded

    def finish(self, values: list[Any]) -> None:
        self.into.update(self.recorded(values))


class Rounding(StepObserver):
    """Precision emulation (`runtime/precision.py`): fed inputs and Consts rounded at the start,
    each layer's inputs and outputs as the plan says, the model's outputs at the end."""

    __slots__ = ("donated", "param_slots", "plan")

    def __init__(self, plan: RoundingPlan, param_slots: Sequence[int], donated: frozenset[int]) -> None:
        self.plan, self.param_slots, self.donated = plan, param_slots, donated

    def start(self, values: list[Any]) -> None:
        self.plan.round_boundary(values, self.param_slots, self.donated)

    def before(self, step: Step, args: list[Any]) -> list[Any]:
        self.plan.round_inputs(step.layer.id, args, step.inputs)
        return args

    def after(self, step: Step, args: list[Any], out: Any) -> Any:
        return self.plan.round_outputs(step.layer.id, out, args)

    def finish(self, values: list[Any]) -> None:
        self.plan.round_results(values)


class Strict(StepObserver):
    """Strict mode (`ops/common/strict.py`): tells the collector which layer's kernel runs, so
    that its findings name the layer."""

    __slots__ = ("collector",)
    alters_values = False

    def __init__(self, collector: Collector) -> None:
        self.collector = collector

    def before(self, step: Step, args: list[Any]) -> list[Any]:
        self.collector.layer = step.layer
        return args


class Timing(StepObserver):
    """Appends (layer, seconds, whether the kernel was asked to write in place) for each
    kernel call, timing the call alone. It sees no value, so a timed run computes what a plain
    run computes (the values kept for Const-only layers read, not computed again)."""

    __slots__ = ("timings",)
    alters_values = False
    sees_values = False

    def __init__(self, timings: list[tuple[Layer, float, bool]]) -> None:
        self.timings = timings

    def call(self, step: Step, args: list[Any], keywords: dict[str, Any]) -> Any:
        started = _clock()
        out = step.compute(*args, **keywords)
        self.timings.append((step.layer, _clock() - started, "inplace" in keywords))
        return out


def read_only(value: Any) -> np.ndarray:
    """A view of a value the run goes on using, for a hook to look at: writing into it would
    change a caller's fed array, or what later layers read."""
    view = np.asarray(value).view()
    view.flags.writeable = False
    return view


__all__ = ["Around", "Hook", "LayerHook", "Record", "Rounding", "StepObserver", "Strict", "Timing", "read_only"]
