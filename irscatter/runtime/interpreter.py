"""The interpreter: a model is compiled once into a flat plan, then run many times.

Compiling checks the wiring, resolves every layer to its op (parsing its attributes once),
infers shapes and types, and lays the plan out as a list of steps over numbered value slots
(`runtime/plan.py`). A run binds the feeds to the inputs (`runtime/binding.py`), fills the
Parameter and Const slots, calls the kernels in order and reads the Result slots. A kernel
writes into an input only where the plan allows it (an op's `inplace_input` whose buffer
nothing else reads or views, or a donated feed): the rule is `ops/common/buffers.py`'s.

The steps run in one of two loops. A run nothing watches takes `_execute_plain`, which only
calls the kernels; a run with a hook, a record of values, timings, strict mode or precision
emulation takes `_watched`, whose loop calls the observers of the run around each step
(`runtime/observers.py`). Both choose how to call a kernel with `_keywords` and turn its failure
into the layer's error with `_kernel_failed`.

With dynamic Parameter shapes, inference runs again for each new combination of input
shapes (kept in a small cache) so that shape errors are still reported before any kernel
runs, naming the layer.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeVar

import numpy as np

from irscatter.checks.analysis import analyze
from irscatter.errors import ExecutionError, IRError, UsageError
from irscatter.findings import Finding
from irscatter.ir.graph import Layer, Model
from irscatter.ops import context
from irscatter.ops.base import TensorInfo
from irscatter.ops.common import recycle, threads
from irscatter.ops.common import strict as strict_mode
from irscatter.ops.common.references import unshared
from irscatter.ops.control.core import IterationBudget
from irscatter.ops.state import core as state
from irscatter.runtime.allocator import keep_freed_memory
from irscatter.runtime.binding import Binding, ShapeChecks
from irscatter.runtime.compressed import warm_compiled_loops
from irscatter.runtime.consts import ConstValues
from irscatter.runtime.decompression import decompressing, decompression_steps
from irscatter.runtime.feeds import checked_feed
from irscatter.runtime.folding import read_only
from irscatter.runtime.graph_view import GraphView
from irscatter.runtime.observers import Around, Hook, LayerHook, Record, Rounding, StepObserver, Strict, Timing
from irscatter.runtime.plan import Plan, Step, plain_entries
from irscatter.runtime.ports import InputSpec, OutputSpec
from irscatter.runtime.precision import active_plan, emulating
from irscatter.runtime.request import InferRequest
from irscatter.runtime.variables import VariableState


@dataclass(frozen=True)
class Observer:
    """Who watches a run from outside, handed down (the run context's `observer`) into the
    bodies of If, Loop and TensorIterator: the user's hook, the record of intermediate values
    (or None), and the path of the body being run (`"loop/body[2]/"`), which prefixes the names
    of its layers."""

    hook: LayerHook | None
    record: dict[str, np.ndarray] | None
    prefix: str = ""

    def enter(self, owner: str, scope: str) -> Observer:
        return Observer(self.hook, self.record, f"{self.prefix}{owner}/{scope}/")

    def layer_hook(self) -> LayerHook | None:
        if self.hook is None or not self.prefix:
            return self.hook
        user, prefix = self.hook, self.prefix

        def renamed(layer: Layer, inputs: tuple[np.ndarray, ...], outputs: tuple[np.ndarray, ...]) -> None:
            user(layer.copy_with(name=prefix + layer.name), inputs, outputs)
        return renamed


def observer() -> Observer | None:
    """The observer of the run in progress (the run context's), if anyone watches it."""
    return context.current().observer


class Outputs(dict):
    """The outputs of a run: a dict keyed by output name, in the order of the model's
    outputs, that also answers to an output's position (`out[0]`) and to its `OutputSpec`
    (`out[compiled.outputs[0]]`), as OpenVINO's results do.

    `findings` holds what a `run(..., strict=True)` found the model relying on (warnings whose
    code is the label); it is empty otherwise."""

    findings: tuple[Finding, ...] | list[Finding] = ()  # a strict run gives the instance its list

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            values = list(self.values())
            if not -len(values) <= key < len(values):
                raise IndexError(f"output {key} out of range: the run has {len(values)} outputs")
            return values[key]
        if isinstance(key, OutputSpec):
            key = key.name
        return super().__getitem__(key)

    def to_tuple(self) -> tuple[np.ndarray, ...]:
        return tuple(self.values())


def _of_plan(name: str, doc: str | None = None) -> Any:
    """A read-only attribute of the compiled model that is its plan's."""
    return property(operator.attrgetter(f"plan.{name}"), doc=doc)


class CompiledModel:
    """A model compiled to run. Its public face is OpenVINO's (inputs, outputs, infer
    requests, state) and `graph`, the read-only view of the analysed graph that tools read
    (`runtime/graph_view.py`); `plan` and the underscored members are the runtime's own."""

    inputs: list[InputSpec] = _of_plan("inputs", "The model's inputs, in Parameter order.")
    outputs: list[OutputSpec] = _of_plan("outputs", "The model's outputs, in Result order.")

    def __init__(self, model: Model) -> None:
        keep_freed_memory()
        self.model = model
        # The weights file as the model was read: compiling reads small constants, each run the rest.
        self._weights_file = model._weights
        self._check_weights()
        analysis = analyze(model)  # raises the first error; layers no Result needs are left out
        self._graph = GraphView.of(analysis.order, analysis.wiring.by_id, analysis.wiring.sources,
                                   analysis.infos, analysis.ops)
        # What is left are warnings and declared port precisions/dims that contradict inference:
        # reported, not fatal, because OpenVINO itself recomputes them.
        self.findings: list[Finding] = analysis.findings
        # The model state: what each variable holds between runs, as an OpenVINO infer request
        # keeps it. `new_request()` gives another, independent one.
        self.variable_infos = analysis.variables
        self.variables = state.Variables()
        # Large outputs of recent runs, written again once the caller has dropped them.
        self._recycler = recycle.Recycler()
        # The precision a run emulates when it names none (OpenVINO's INFERENCE_PRECISION_HINT
        # given to `compile_model`); None is f32.
        self.default_precision: str | None = None
        self.plan = Plan.of(model, analysis)
        warm_compiled_loops(self.plan.fold.replaced.values())
        self._binding = Binding(self.plan, self._graph, model.source)
        self._shapes = ShapeChecks(self.plan.inputs, self._graph, model.source)
        self._consts = ConstValues(self.plan, model.source)  # decoded from the first run on
        self._plain: list[tuple] | None = None  # the steps as `_execute_plain` takes them, from its first run

    @property
    def graph(self) -> GraphView:
        """The analysed graph, read-only: the layers in run order, their wiring, inferred types
        and ops (`runtime/graph_view.py` states what it offers)."""
        return self._graph

    @property
    def input_names(self) -> list[str]:
        """Every name a feed may be given under, in input order: each input's Parameter name,
        then its tensor names."""
        return list(self._binding.feed_index)

    def get_ordered_ops(self) -> list[Layer]:
        """The layers in the order they run (producers before consumers), Parameters, Consts
        and Results included."""
        return [self._graph.layers[lid] for lid in self._graph.order]

    def __call__(self, inputs: Any = None, **kwargs: Any) -> Outputs:
        """`compiled(inputs)`: the same as `run(inputs, ...)`."""
        return self.run(inputs if inputs is not None else {}, **kwargs)

    def infer(self, inputs: Any = None, **kwargs: Any) -> Outputs:
        """OpenVINO's spelling of `run`."""
        return self.run(inputs if inputs is not None else {}, **kwargs)

    def input(self, key: Any = None) -> InputSpec:
        """One input, as OpenVINO's `compiled.input()`: the only one, or by position or name."""
        return _the_only(self.inputs, "input") if key is None else self.inputs[self._binding.input_index(key)]

    def output(self, key: Any = None) -> OutputSpec:
        """One output, as OpenVINO's `compiled.output()`: the only one, or by position or name."""
        if key is None:
            return _the_only(self.outputs, "output")
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < len(self.outputs):
            return self.outputs[int(key)]
        for spec in self.outputs:
            if key == spec.name or key in spec.names:
                return spec
        raise UsageError(f"there is no output {key!r}: the outputs are {[s.any_name for s in self.outputs]}")

    def create_infer_request(self) -> InferRequest:
        """An infer request with variables of its own (OpenVINO's way to run a compiled model)."""
        return InferRequest(self)

    def infer_new_request(self, inputs: Any = None) -> Outputs:
        """One run on a fresh request: the variables start from their initial values."""
        return InferRequest(self).infer(inputs)

    # --- running ----------------------------------------------------------------------------

    def feed_arrays(self, feeds: Any) -> list[np.ndarray]:
        """The fed arrays in input order, as a run would bind and check them."""
        return self._binding.bind(feeds)

    def ambiguous_names(self) -> frozenset[str]:
        """The tensor names that are also the address of another port ("<layer>:<port id>")."""
        return self._binding.ambiguous_names()

    def run(
        self,
        feeds: Any,
        *,
        intermediate: bool = False,
        hook: LayerHook | None = None,
        donate: Any = (),
        outputs: Iterable[str] | None = None,
        timings: list[tuple[Layer, float, bool]] | None = None,
        strict: bool = False,
        precision: str | None = None,
        decompression: str | None = None,
    ) -> Outputs:
        """Run on `feeds`; see `RunnableModel.run`. `timings`, when given, receives (layer,
        seconds, whether the kernel wrote in place) for every kernel call, in execution order.
        `strict=True` also reports each use of behaviour the spec leaves undefined, in
        `Outputs.findings` (see `RunnableModel.run`). `precision="f16"|"bf16"` emulates a device
        inferring in that precision (see `runtime/precision.py`); `decompression="f32"` computes
        compressed weights' decompression layers in f32, as OpenVINO's CPU plugin does (see
        `runtime/decompression.py`)."""
        if hook is not None and not callable(hook):
            raise UsageError(f"hook= must be callable as hook(layer, inputs, outputs); got {type(hook).__name__}",
                             argument="hook", value=hook)
        if timings is not None and not callable(getattr(timings, "append", None)):
            raise UsageError(f"timings= must be a list to append to; got {type(timings).__name__}",
                             argument="timings", value=timings)
        self._check_weights()
        if precision is None:
            precision = self.default_precision
        bound = self._binding.bind(feeds)
        donated = self._binding.donated(donate)
        # A donated buffer that another feed also reaches (the same array fed twice, or a
        # view of it) stays untouched: the other input must still see what was fed.
        donated = frozenset(i for i in donated
                            if not any(j != i and np.may_share_memory(bound[i], b) for j, b in enumerate(bound)))
        wanted = None if outputs is None else self._binding.selection(outputs)
        intermediate_run = intermediate or wanted is not None
        if strict or precision is not None or decompression is not None or strict_mode.collector() is not None:
            with strict_mode.collecting(strict_mode.Collector() if strict else None) as collector:
                with emulating(precision), decompressing(decompression):  # no-ops without them
                    results = self._run_bound(bound, donated, intermediate_run, hook, timings)
        else:  # the plain run: no collector to install, none to switch off
            collector = None
            results = self._run_bound(bound, donated, intermediate_run, hook, timings)
        if intermediate:
            return _with_findings(Outputs(results), collector)
        if wanted is not None:
            results = {name: results[key] for name, key in wanted.items()}
        owned = self._owned(results, bound, donated)
        self._recycler.keep(owned.values())
        return _with_findings(owned, collector)

    def _execute_plain(self, values: list[Any], donated: frozenset[int],
                       entries: list[tuple] | None = None) -> list[Any]:
        """The steps of a run nothing watches (no hook, record, timing, strict mode or precision
        emulation), or the given `entries` of `plan.plain_entries`: what `_watched`'s loop does,
        with each step's inputs fetched by one prepared getter and the rare cases (a buffer to
        reuse, outputs to leave out, several outputs) sent to `_call`. Nothing but the call is
        done per step here, which is what a model of thousands of small layers spends its time
        on: keep it so."""
        step: Step | None = None
        try:
            for compute, fetch, out, release, call, step in self._plain_steps() if entries is None else entries:
                if call is not None:
                    _call(call, values, donated)
                else:
                    value = compute(*fetch(values))
                    values[out] = value[0] if value.__class__ is tuple else value
                    value = None  # no lingering reference: a later step may reuse the buffer
                for slot in release:
                    values[slot] = None
        except _KERNEL_ERRORS as error:
            if step is not None:  # (None: it failed before the first step, and is no layer's error)
                self._kernel_failed(step, [values[s] for s in step.inputs], error)
            raise
        return values

    def _kernel_failed(self, step: Step, args: list[Any], error: BaseException) -> None:
        """Raise the failure of `step`'s kernel as its layer's error: an `IRError` with the
        layer named, an error of its own for running out of memory, and for one of numpy's
        errors what `_explain` finds. Returns when the failure is irscatter's own bug, which
        the caller re-raises as it is."""
        layer = step.layer
        if isinstance(error, IRError):
            raise error.add_context(file=self.model.source, layer=layer.ref, line=layer.line) from None
        if isinstance(error, MemoryError):  # the limits are checked before allocating; this is the last net
            raise ExecutionError("the machine ran out of memory computing this layer", file=self.model.source,
                                 layer=layer.ref, line=layer.line, label="out-of-memory") from None
        self._explain(step, args)

    def _explain(self, step: Step, args: list[Any]) -> None:
        """A kernel failed with one of numpy's errors: when its inputs have shapes or types that
        inference never saw (a model's state, set or carried over between runs), the op's
        inference on the arrays themselves says what does not fit, and that is the error. When
        inference accepts them, the failure is irscatter's own, and the caller re-raises it."""
        if any(not isinstance(a, np.ndarray) for a in args):
            return
        given = getattr(step.compute, "layer_arguments", None)  # (a fused step reads more than its layer, or others)
        args = given(args) if given is not None else args[:getattr(step.compute, "layer_inputs", len(args))]
        try:
            self._graph.op(step.layer.id).infer(*(TensorInfo.of(a) for a in args))
        except IRError as e:
            raise e.add_context(file=self.model.source, layer=step.layer.ref, line=step.layer.line) from None

    def _plain_steps(self) -> list[tuple]:
        """The steps of a plain run (those that read kept values left out) as `_execute_plain`
        takes them, made on its first run."""
        if self._plain is None:
            self._plain = plain_entries(self.plan.run_steps)
        return self._plain

    def _fill_kept(self, values: list[Any]) -> None:
        """Put the kept values of Const-only layers into their slots, computing them on the
        first run that asks (`runtime/folding.py`). They are computed in a list of their own,
        where no step frees or overwrites a value to keep."""
        fold, steps = self.plan.fold, self.plan.steps
        if fold.values is None:
            scratch: list[Any] = [None] * self.plan.n_slots
            for slot, array in self._consts.arrays():
                scratch[slot] = array
            once = [replace(steps[i], release=tuple(s for s in steps[i].release if s not in fold.kept),
                            reuse_slot=None if steps[i].reuse_slot in fold.kept else steps[i].reuse_slot)
                    for i in fold.once]
            self._execute_plain(scratch, frozenset(), plain_entries(once))
            fold.values = [(slot, read_only(scratch[slot])) for slot in sorted(fold.kept)]
        for slot, array in fold.values:
            values[slot] = array

    def _owned(self, results: Mapping[str, Any], bound: list[np.ndarray], donated: frozenset[int]) -> Outputs:
        """The outputs, each an array of its own: never a view of a fed array (unless that
        input was donated), never sharing memory with another output, and writable (a Const's
        cached value, or a view of one, is copied)."""
        fed = [b for i, b in enumerate(bound) if i not in donated]
        return Outputs(zip(results, caller_owned(list(results.values()), fed)))

    def _run_bound(self, bound: list[np.ndarray], donated: frozenset[int], intermediate: bool,
                   hook: LayerHook | None, timings: list | None) -> dict[str, Any]:
        bodies_recorded: dict[str, np.ndarray] = {}  # the values of the layers inside If, Loop, ... bodies
        watching = None
        if intermediate or hook is not None:
            watching = Observer(hook, bodies_recorded if intermediate else None)
        record = Record({}, self._recorded) if intermediate else None
        token = context.enter(observer=watching, recycler=self._recycler, iterations=IterationBudget())
        try:
            # A float that overflows to inf or turns NaN is a value the model computes, as on any
            # device, not a Python warning (`run --check-numerics` says where one first appears).
            with state.using(self.variables, exclusive=bool(self.variable_infos)), np.errstate(all="ignore"), \
                    threads.holding_for_run():
                values = self._execute(bound, donated, hook, timings, record)
        finally:
            context.leave(token)
        if record is not None:
            record.into.update(bodies_recorded)
            return record.into
        plan = self.plan
        return {spec.name: values[slot] for spec, slot in zip(plan.outputs, plan.output_slots)}

    def _recorded(self, values: list[Any], prefix: str = "") -> dict[str, np.ndarray]:
        key = self._graph.tensor_key
        return {prefix + key(src): np.asarray(values[slot]) for src, slot in self.plan.slot_of.items()
                if values[slot] is not None}

    # --- model state ------------------------------------------------------------------------

    def query_state(self) -> list[VariableState]:
        """The model's variables, one handle each (read, set, reset), in the order the
        ReadValue layers come."""
        return [VariableState(info, self.variables) for info in self.variable_infos.values()]

    def reset_state(self) -> None:
        """Every variable back to its initial value (the next run reads it)."""
        self.variables.reset()

    def _check_weights(self) -> None:
        """Refuse to run on a weights file other than the one read (see `ir/files.py`)."""
        if self._weights_file is not None:
            self._weights_file.check()

    def new_request(self) -> CompiledModel:
        """The same compiled model with state of its own: runs of the two never share variables."""
        other = copy.copy(self)
        other.variables = state.Variables()
        other._shapes = self._shapes.fresh()
        other._recycler = recycle.Recycler()
        return other

    def release_buffers(self) -> None:
        """Let go of the large outputs of recent runs that this compiled model keeps for reuse
        (see `ops/common/recycle.py`); those the caller still holds stay the caller's."""
        self._recycler.release()

    def run_positional(self, arrays: list[np.ndarray], observe: Observer | None = None) -> list[np.ndarray]:
        """Run with one array per input in Parameter order; outputs in Result order.

        For an op that runs a body of its own (a region, a Loop's body): the arrays come from its
        inputs, and the run belongs to the model run in progress, whose state it shares and whose
        observer (`observe`, already entered into this body) sees its layers."""
        inputs = self.plan.inputs
        if len(arrays) != len(inputs):
            raise ExecutionError(f"{len(inputs)} inputs expected, {len(arrays)} given", file=self.model.source)
        bound = [checked_feed(spec, a, self.model.source) for spec, a in zip(inputs, arrays)]
        if observe is None:
            values = self._execute(bound)
        else:
            record = None if observe.record is None else Record(observe.record,
                                                               partial(self._recorded, prefix=observe.prefix))
            with context.using(observer=observe):
                values = self._execute(bound, hook=observe.layer_hook(), record=record)
        return [values[slot] for slot in self.plan.output_slots]

    def _execute(self, bound: list[np.ndarray], donated: frozenset[int] = frozenset(),
                 hook: LayerHook | None = None, timings: list | None = None,
                 record: Record | None = None) -> list[Any]:
        values = self._filled(bound)
        observers = self._step_observers(hook, timings, record, donated)
        steps = decompression_steps(self)  # None unless asked for, on a model with compressed weights
        if steps is None and not (observers and any(o.sees_values for o in observers)):
            # A run that sees no layer's values reads the kept values of Const-only layers;
            # timings too, since they time what a plain run computes.
            if self.plan.fold.kept:
                self._fill_kept(values)
            if not observers:
                return self._execute_plain(values, donated)
            return self._watched(values, self.plan.run_steps, observers, donated)
        if steps is None:
            altered = any(observer.alters_values for observer in observers)
            steps = self.plan.steps if altered else self.plan.watched_steps
        for slot, array in self._consts.arrays(every=True):  # (those only the steps left out of a plain run read)
            values[slot] = array
        return self._watched(values, steps, observers, donated)

    def _filled(self, bound: list[np.ndarray]) -> list[Any]:
        """The slots of a run, the fed inputs and the Consts in theirs (checked first against the
        shapes inference saw, when those may change)."""
        plan = self.plan
        if not plan.is_static:
            self._shapes.check(bound)
        values: list[Any] = [None] * plan.n_slots
        for slot, array in zip(plan.param_slots, bound):
            values[slot] = array
        self._consts.start_run()
        for slot, array in self._consts.arrays():
            values[slot] = array
        return values

    def _step_observers(self, hook: LayerHook | None, timings: list | None, record: Record | None,
                        donated: frozenset[int]) -> list[StepObserver]:
        """What watches this run, in the order `runtime/observers.py` gives; empty for a plain run."""
        observers: list[StepObserver] = [] if hook is None else [Hook(hook)]
        if record is not None:
            observers.append(record)
        rounding = active_plan(self)  # None unless a run emulates f16 or bf16
        if rounding is not None:
            observers.append(Rounding(rounding, self.plan.param_slots, donated))
        collector = strict_mode.collector()
        if collector is not None:
            observers.append(Strict(collector))
        if timings is not None:
            observers.append(Timing(timings))
        return observers

    def _watched(self, values: list[Any], steps: list[Step], observers: list[StepObserver],
                 donated: frozenset[int]) -> list[Any]:
        """The loop of a watched run: each kernel called between what the observers do before
        it and after it (`runtime/observers.py`)."""
        around = Around(observers)
        before, call, after, reuse_allowed, release = (around.before, around.call, around.after,
                                                       around.reuse_allowed, around.release)
        if around.start is not None:
            around.start(values)
        args: list[Any] | None  # None between steps (see below)
        for step in steps:
            keywords = _keywords(step, values, donated, reuse_allowed)
            args = [values[s] for s in step.inputs]
            if before is not None:
                args = before(step, args)
            try:
                out = step.compute(*args, **keywords) if call is None else call(step, args, keywords)
            except _KERNEL_ERRORS as error:
                self._kernel_failed(step, args, error)
                raise
            if after is not None:
                out = after(step, args, out)
            if isinstance(out, tuple):  # stored as `_store` stores it, without a call per step
                for slot, array in zip(step.outputs, out):
                    values[slot] = array
            elif step.outputs:
                values[step.outputs[0]] = out
            args = out = array = None  # drop local references: the next step may reuse a buffer
            if release:
                for slot in step.release:
                    values[slot] = None
        if around.finish is not None:
            around.finish(values)
        return values


# What a kernel call may fail with and still be the layer's error to report (`_kernel_failed`).
_KERNEL_ERRORS = (IRError, MemoryError, ValueError, IndexError, TypeError)
_PLAIN: dict[str, Any] = {}  # the keywords of a plain call (never changed)
_INPLACE: dict[str, Any] = {"inplace": True}


def _keywords(step: Step, values: list[Any], donated: frozenset[int], reuse_allowed: bool) -> dict[str, Any]:
    """How both run loops call the kernel of `step`: updating the inputs whose buffers the
    caller donated (`written`, watched or not: the caller handed them over), writing its output
    into an input's buffer (`inplace`) or leaving outputs out (`unused`), the last two only
    where nothing can observe the overwritten input or a missing output (`reuse_allowed`: no
    hook, no record of values). This is what the run offers; what a kernel takes is
    `ops.common.buffers`'s rule. Asked before the step's arguments are gathered, since whether
    a buffer is the run's alone is read off its reference count (`references.unshared`), which
    the list of arguments would raise."""
    if step.writable and donated:
        written = frozenset(pos for pos, fed in step.writable if fed in donated)
        if written:
            return {"written": written}
    if reuse_allowed:
        if step.reuse_slot is not None and (step.reuse_input in donated if step.reuse_input is not None
                                            else unshared(values, step.reuse_slot)):
            return _INPLACE
        if step.unused:
            return {"unused": step.unused}
    return _PLAIN


def _call(step: Step, values: list[Any], donated: frozenset[int]) -> None:
    """One step of `_execute_plain` that is not a simple call, called as `_watched` calls it."""
    keywords = _keywords(step, values, donated, True)
    _store(step, values, step.compute(*[values[s] for s in step.inputs], **keywords))


def _store(step: Step, values: list[Any], out: Any) -> None:
    """Put what `step`'s kernel returned in its output slots."""
    if isinstance(out, tuple):
        for slot, array in zip(step.outputs, out):
            values[slot] = array
    elif step.outputs:  # a sink (Assign) may be written without an output port
        values[step.outputs[0]] = out


def _with_findings(outputs: Outputs, collector: strict_mode.Collector | None) -> Outputs:
    """The outputs of a run, carrying the findings of its strict collector (if strict)."""
    if collector is not None:
        outputs.findings = collector.findings
    return outputs


_Spec = TypeVar("_Spec")


def _the_only(specs: list[_Spec], what: str) -> _Spec:
    if len(specs) != 1:
        raise UsageError(f"{what}() without an index or name needs a model of one {what}; this one has {len(specs)}")
    return specs[0]


def caller_owned(values: list[Any], fed: list[np.ndarray]) -> list[Any]:
    """`values` as arrays a caller may keep and write: each is copied when it is read-only (a
    Const's cached value, or a view of one), views an array in `fed`, or shares memory with an
    earlier value of the list: the outputs' part of the ownership rule (`ops/common/buffers.py`)."""
    out: list[Any] = []
    for value in values:
        if isinstance(value, np.generic):  # numpy's ufuncs give a scalar for 0-d operands
            value = np.array(value)
        elif isinstance(value, np.ndarray) and (
                not value.flags.writeable
                or any(np.may_share_memory(value, b) for b in fed)
                or any(np.may_share_memory(value, o) for o in out if isinstance(o, np.ndarray))):
            value = value.copy()
        out.append(value)
    return out
