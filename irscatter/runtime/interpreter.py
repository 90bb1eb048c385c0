"""The interpreter: a model is compiled once into a flat plan, then run many times.

Compiling checks the wiring, resolves every layer to its op (parsing its attributes once),
infers shapes and types, and lays the plan out as a list of steps over numbered value
slots. Each step knows which slots to drop once it has run, so intermediate buffers live
only until their last consumer. A run fills the Parameter and Const slots, calls the
kernels in order and reads the Result slots. A kernel writes into an input only where the plan
allows it (an op's `inplace_input` whose buffer nothing else reads or views, or a donated feed).

With dynamic Parameter shapes, inference runs again for each new combination of input
shapes (kept in a small cache) so that shape errors are still reported before any kernel
runs, naming the layer.
"""

from __future__ import annotations

import copy
import math
import operator
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from irscatter import limits
from irscatter.checks.analysis import analyze
from irscatter.checks.infer import infer_graph, itemsize
from irscatter.errors import ExecutionError, IRError, UsageError
from irscatter.findings import Finding
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer, Model, output_name
from irscatter.ir.shapes import PartialShape
from irscatter.ir.topology import Source
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common import recycle
from irscatter.ops.common import strict as strict_mode
from irscatter.ops.control.core import end_iteration_budget, start_iteration_budget
from irscatter.ops.state import core as state
from irscatter.runtime.compressed import fuse_compressed
from irscatter.runtime.decompression import decompressing, decompression_steps
from irscatter.runtime.feeds import checked_feed, is_openvino_tensor
from irscatter.runtime.folding import FoldPlan, keep_once, read_only
from irscatter.runtime.ports import InputSpec, OutputSpec
from irscatter.runtime.precision import active_plan, emulating
from irscatter.runtime.request import InferRequest
from irscatter.runtime.variables import VariableState

_BOUNDARY = ("Parameter", "Const", "Result")
_SHAPE_CACHE_SIZE = 16

LayerHook = Callable[[Layer, tuple[np.ndarray, ...], tuple[np.ndarray, ...]], None]


@dataclass(frozen=True)
class Observer:
    """Who watches a run from outside, handed down into the bodies of If, Loop and
    TensorIterator: the user's hook, the record of intermediate values (or None), and the path
    of the body being run (`"loop/body[2]/"`), which prefixes the names of its layers."""

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


_OBSERVER: ContextVar[Observer | None] = ContextVar("irscatter_observer", default=None)


def observer() -> Observer | None:
    """The observer of the run in progress, if anyone watches it."""
    return _OBSERVER.get()


_SOLE_REFERENCE = recycle.SOLE_REFERENCE  # what getrefcount reads for an array only `values` holds


@dataclass(slots=True, eq=False)  # slots: a model of 20000 layers builds 20000 of these, and runs read them
class Step:
    layer: Layer
    compute: Callable[..., Any]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    release: tuple[int, ...]  # slots whose last reader is this step
    # The slot whose buffer the kernel may write its output into (the op's `inplace_input`),
    # when this step is its last reader; and, when that slot is a Parameter's, the input's
    # position, since a fed buffer may only be reused if the caller donates it.
    reuse_slot: int | None = None
    reuse_input: int | None = None
    # Output positions no later step and no Result reads, for an op that can leave them out.
    unused: frozenset[int] = frozenset()
    # (input position, model input position) of each input the op updates in place when the
    # caller donates it (the op's `writes_inputs` that are fed by a Parameter).
    writable: tuple[tuple[int, int], ...] = ()


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


class CompiledModel:
    def __init__(self, model: Model) -> None:
        self.model = model
        # The weights file as the model was read: compiling reads small constants, each run the rest.
        self._weights_file = model._weights
        self._check_weights()
        analysis = analyze(model)  # raises the first error; layers no Result needs are left out
        parameters, results = model.parameters, model.results
        self.order = analysis.order
        self.layers = analysis.wiring.by_id
        self.sources = analysis.wiring.sources
        self.ops = analysis.ops
        self.infos = analysis.infos
        # What is left are warnings and declared port precisions/dims that contradict inference:
        # reported, not fatal, because OpenVINO itself recomputes them.
        self.findings: list[Finding] = analysis.findings
        # The model state: what each variable holds between runs, as an OpenVINO infer request
        # keeps it. `new_request()` gives another, independent one.
        self.variable_infos = analysis.variables
        self.variables = state.Variables()
        # Large outputs of recent runs, written again once the caller has dropped them.
        self._recycler = recycle.Recycler()
        self._shape_cache: OrderedDict[tuple, None] = OrderedDict()
        # The precision a run emulates when it names none (OpenVINO's INFERENCE_PRECISION_HINT
        # given to `compile_model`); None is f32.
        self.default_precision: str | None = None
        self._plan(parameters, results)

    # --- planning ---------------------------------------------------------------------------

    def _plan(self, parameters: list[Layer], results: list[Layer]) -> None:
        layers, ops, sources = self.layers, self.ops, self.sources
        slot_of: dict[Source, int] = {}
        for lid in self.order:
            for pos in range(len(layers[lid].outputs)):
                slot_of[(lid, pos)] = len(slot_of)
        self.slot_of = slot_of
        self.n_slots = len(slot_of)

        self.inputs = [
            InputSpec(p.name, p.outputs[0].names if p.outputs else (), self.infos[(p.id, 0)].etype,
                      self.infos[(p.id, 0)].shape, p)
            for p in parameters
        ]
        self.param_slots = [slot_of[(p.id, 0)] for p in parameters]
        self.const_slots = []
        steps_layers = []
        for lid in self.order:
            kind = layers[lid].type
            if kind == "Const":
                self.const_slots.append((slot_of[(lid, 0)], layers[lid]))
            if kind not in _BOUNDARY:
                steps_layers.append(lid)
        # The decoded Const values, from the first run on (a Const is read when first used, so
        # an unused model's weights are never touched; after that, a lookup per run is waste).
        self._consts: list[tuple[int, np.ndarray]] | None = None
        self._plain: list[tuple] | None = None  # the steps as `_execute_plain` takes them, from its first run

        self.outputs: list[OutputSpec] = []
        self.output_slots: list[int] = []
        taken: set[str] = set()
        for r in results:
            src = sources[r.id][0]
            assert src is not None
            info = self.infos[src]
            port = layers[src[0]].outputs[src[1]]
            name = _distinct(output_name(r, port), r.name, taken)
            taken.add(name)
            self.outputs.append(OutputSpec(name, info.etype, info.shape, r, tuple(port.names)))
            self.output_slots.append(slot_of[src])

        keep = set(self.output_slots) | {s for s, _ in self.const_slots}
        last_reader: dict[int, int] = {}
        readers: dict[int, int] = {}
        step_inputs = []
        for i, lid in enumerate(steps_layers):
            inputs = tuple(slot_of[s] for s in sources[lid])  # type: ignore[index]
            step_inputs.append(inputs)
            counted = not ops[lid].shape_only
            for slot in inputs:
                last_reader[slot] = i
                if counted:
                    readers[slot] = readers.get(slot, 0) + 1
        releases: dict[int, list[int]] = {}
        for slot, i in last_reader.items():
            if slot not in keep:
                releases.setdefault(i, []).append(slot)
        param_input = {slot: i for i, slot in enumerate(self.param_slots)}
        self.steps = []
        for i, (lid, inputs) in enumerate(zip(steps_layers, step_inputs)):
            op, layer = ops[lid], layers[lid]
            reuse = None
            if op.inplace_input is not None:
                reuse = self._reusable(op, inputs, i, keep, last_reader, readers, param_input)
            self.steps.append(Step(
                layer=layer,
                compute=op.compute,
                inputs=inputs,
                outputs=tuple(slot_of[(lid, p)] for p in range(len(layer.outputs))),
                release=tuple(releases.get(i, ())),
                reuse_slot=reuse,
                reuse_input=param_input.get(reuse) if reuse is not None else None,
                unused=self._unused_outputs(lid, keep, last_reader, slot_of) if op.skips_unused_outputs else frozenset(),
                writable=tuple((pos, param_input[inputs[pos]]) for pos in op.writes_inputs
                               if pos < len(inputs) and inputs[pos] in param_input),
            ))
        self._fold = self._plan_folding()
        # The steps of a run that reads the kept values of Const-only layers instead of computing them.
        self._run_steps = [self._fold.replaced.get(i, step) for i, step in enumerate(self.steps)
                           if i not in self._fold.skipped]
        self._feed_index = self._feed_names()
        self._keys: dict[str, str] | None = None  # what `outputs=` accepts (see _tensor_keys)
        self.is_static = all(spec.shape.is_static and spec.etype is not ElementType.dynamic for spec in self.inputs)


    def _plan_folding(self) -> FoldPlan:
        """What of the layers that depend on Consts alone to compute once (runtime/folding.py),
        within `limits.folded_bytes`."""
        slot_bytes: dict[int, int | None] = {}
        for (lid, pos), slot in self.slot_of.items():
            info = self.infos.get((lid, pos))
            static = (info is not None and info.shape.is_static
                      and info.etype not in (ElementType.dynamic, ElementType.string))
            slot_bytes[slot] = math.prod(info.shape.to_tuple()) * itemsize(info.etype) if static else None
        budget = limits.current().folded_bytes
        fused = fuse_compressed(self.steps, self.ops, {slot: self.infos.get(key) for key, slot in self.slot_of.items()},
                                dict(self.const_slots), set(self.output_slots), budget)
        slot_bytes.update(dict.fromkeys(fused.weights))  # looked up by blocks on each run instead
        return fused.into(keep_once(self.steps, lambda step: self.ops[step.layer.id].foldable,
                                    {s for s, _ in self.const_slots}, set(self.output_slots), slot_bytes,
                                    budget - fused.cost))

    def _unused_outputs(self, lid: int, keep: set[int], last_reader: dict[int, int],
                        slot_of: dict[tuple[int, int], int]) -> frozenset[int]:
        if not self.ops[lid].skips_unused_outputs:
            return frozenset()
        slots = [slot_of[(lid, p)] for p in range(len(self.layers[lid].outputs))]
        return frozenset(p for p, slot in enumerate(slots) if slot not in keep and slot not in last_reader)

    @staticmethod
    def _reusable(op: Op, inputs: tuple[int, ...], step: int, keep: set[int], last_reader: dict[int, int],
                  readers: dict[int, int], param_input: dict[int, int]) -> int | None:
        """The input slot the step may overwrite: the op allows it, no Result or Const holds
        the slot, and no later step reads it. A Parameter's slot must have no other reader at
        all (ShapeOf aside), because views of a fed buffer cannot be told from the caller's
        own references."""
        if op.inplace_input is None or op.inplace_input >= len(inputs):
            return None
        slot = inputs[op.inplace_input]
        if slot in keep or last_reader.get(slot) != step or inputs.count(slot) != 1:
            return None
        if slot in param_input and readers.get(slot) != 1:
            return None
        return slot

    @property
    def input_names(self) -> list[str]:
        """Every name a feed may be given under, in input order: each input's Parameter name,
        then its tensor names."""
        return list(self._feed_index)

    def get_ordered_ops(self) -> list[Layer]:
        """The layers in the order they run (producers before consumers), Parameters, Consts
        and Results included."""
        return [self.layers[lid] for lid in self.order]

    def __call__(self, inputs: Any = None, **kwargs: Any) -> Outputs:
        """`compiled(inputs)`: the same as `run(inputs, ...)`."""
        return self.run(inputs if inputs is not None else {}, **kwargs)

    def infer(self, inputs: Any = None, **kwargs: Any) -> Outputs:
        """OpenVINO's spelling of `run`."""
        return self.run(inputs if inputs is not None else {}, **kwargs)

    def input(self, key: Any = None) -> InputSpec:
        """One input, as OpenVINO's `compiled.input()`: the only one, or by position or name."""
        return _the_only(self.inputs, "input") if key is None else self.inputs[self._input_index(key)]

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

    def _feed_names(self) -> dict[str, int]:
        index: dict[str, int] = {}
        for i, spec in enumerate(self.inputs):
            for name in (spec.name, *spec.names):
                index.setdefault(name, i)
        return index

    # --- running ----------------------------------------------------------------------------

    def _input_index(self, key: Any) -> int:
        """The position of the input a feed key names: a name, a position, or an InputSpec."""
        file = self.model.source
        if isinstance(key, str):  # the common case first: a name
            i = self._feed_index.get(key)
            if i is not None:
                return i
        known = ", ".join(f'"{s.name}"' for s in self.inputs) or "none"  # for the messages only
        if isinstance(key, InputSpec):
            key = key.name
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            if not 0 <= key < len(self.inputs):
                raise ExecutionError(f"there is no input {key}: the model has {len(self.inputs)} inputs ({known})",
                                     file=file, label="unknown-input")
            return int(key)
        i = self._feed_index.get(key) if isinstance(key, str) else None
        if i is None:
            raise ExecutionError(f'there is no input named "{key}" (the inputs are {known})', file=file,
                                 label="unknown-input")
        return i

    def _as_mapping(self, feeds: Any) -> Mapping[Any, Any]:
        """Feeds as a mapping: a dict as given, a list or tuple as the inputs in order, a single
        array as the only input."""
        if isinstance(feeds, Mapping):
            return feeds
        if (isinstance(feeds, np.ndarray) or is_openvino_tensor(feeds)) and len(self.inputs) == 1:
            return {0: feeds}
        if isinstance(feeds, (list, tuple)):
            if len(feeds) != len(self.inputs):
                raise ExecutionError(f"{len(feeds)} inputs given in a list, the model has {len(self.inputs)} "
                                     f"({', '.join(s.name for s in self.inputs) or 'none'})",
                                     file=self.model.source, label="missing-input")
            return dict(enumerate(feeds))
        raise ExecutionError(f"feeds must be a dict (by name, position or input), a list in input order, or one "
                             f"array for a one-input model; got {type(feeds).__name__}", file=self.model.source,
                             label="unknown-input")

    def feed_arrays(self, feeds: Any) -> list[np.ndarray]:
        """The fed arrays in input order, as a run would bind and check them."""
        return self._bind(feeds)

    def _bind(self, feeds: Any) -> list[np.ndarray]:
        file = self.model.source
        bound: list[np.ndarray | None] = [None] * len(self.inputs)
        for key, value in self._as_mapping(feeds).items():
            i = self._input_index(key)
            spec = self.inputs[i]
            if bound[i] is not None:
                raise ExecutionError(f'input "{spec.name}" is fed twice (under two of its names)', file=file,
                                     label="fed-twice")
            bound[i] = self._check_feed(spec, value)
        for spec, value in zip(self.inputs, bound):
            if value is None:
                raise ExecutionError("no value was fed for this input", file=file, layer=spec.layer.ref,
                                     label="missing-input")
        return bound  # type: ignore[return-value]

    def _check_feed(self, spec: InputSpec, value: Any) -> np.ndarray:
        return checked_feed(spec, value, self.model.source)

    def _check_dynamic_shapes(self, bound: list[np.ndarray]) -> None:
        key = tuple((a.shape, a.dtype.str) for a in bound)
        if key in self._shape_cache:
            self._shape_cache.move_to_end(key)
            return
        overrides = {
            spec.layer.id: TensorInfo(spec.etype if spec.etype is not ElementType.dynamic else ElementType.from_dtype(a.dtype),
                                      PartialShape.of(a.shape))
            for spec, a in zip(self.inputs, bound)
        }
        infer_graph(self.order, self.layers, self.ops, self.sources, overrides, file=self.model.source)
        self._shape_cache[key] = None
        if len(self._shape_cache) > _SHAPE_CACHE_SIZE:
            self._shape_cache.popitem(last=False)

    def _listed(self, given: Any, option: str, label: str) -> list[Any]:
        """What `donate=` or `outputs=` names: one name (a position, an input or output object)
        or an iterable of them."""
        if isinstance(given, (str, int, np.integer, InputSpec, OutputSpec)):
            return [given]
        if isinstance(given, (bytes, bytearray, Mapping)) or not isinstance(given, Iterable):
            raise ExecutionError(f"{option}= takes a name or a list of names, not a {type(given).__name__}",
                                 file=self.model.source, label=label)
        return list(given)

    def _donated(self, names: Any) -> frozenset[int]:
        out = set()
        for name in self._listed(() if names is None else names, "donate", "unknown-input"):
            try:
                out.add(self._input_index(name))
            except ExecutionError as e:
                raise ExecutionError(f'cannot donate "{name}": {e.message}', file=self.model.source,
                                     label="unknown-input") from None
        return frozenset(out)

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
            raise UsageError(f"hook= must be callable as hook(layer, inputs, outputs); got {type(hook).__name__}")
        if timings is not None and not callable(getattr(timings, "append", None)):
            raise UsageError(f"timings= must be a list to append to; got {type(timings).__name__}")
        self._check_weights()
        if precision is None:
            precision = self.default_precision
        bound = self._bind(feeds)
        donated = self._donated(donate)
        # A donated buffer that another feed also reaches (the same array fed twice, or a
        # view of it) stays untouched: the other input must still see what was fed.
        donated = frozenset(i for i in donated
                            if not any(j != i and np.may_share_memory(bound[i], b) for j, b in enumerate(bound)))
        wanted = None if outputs is None else self._selection(outputs)
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

    def _selection(self, names: Iterable[str]) -> dict[str, str]:
        """Each requested name with the key its value is recorded under ("<layer>:<port>"):
        an output name, a tensor name of any layer's output port, or "<layer name>:<port id>";
        "tensor:NAME" and "port:LAYER:PORT" name one of the two namespaces outright, and a bare
        name that is a tensor name and the address of another port is refused as ambiguous."""
        keys = self._tensor_keys()
        chosen = {}
        for name in self._listed(names, "outputs", "unknown-output"):
            name = name.name if isinstance(name, OutputSpec) else name
            key = keys.get(name) if isinstance(name, str) else None
            if key is None:
                raise ExecutionError(f'outputs=: no tensor is named "{name}" (give an output name, a tensor name '
                                     f'or "<layer name>:<port id>")', file=self.model.source, label="unknown-output")
            if isinstance(key, tuple):
                raise ExecutionError(f'outputs=: "{name}" is both the name of tensor {key[0]} and the address of port '
                                     f'{key[1]}: say "tensor:{name}" or "port:{name}"', file=self.model.source,
                                     label="unknown-output")
            chosen[name] = key
        return chosen

    def _tensor_keys(self) -> dict[str, Any]:
        """Every name `outputs=` accepts, with the key its value is recorded under (made once);
        an ambiguous bare name maps to the pair of keys it could mean."""
        if self._keys is None:
            ports: dict[str, str] = {}
            tensors: dict[str, str] = {}
            key_of_slot: dict[int, str] = {}
            for (lid, pos), slot in self.slot_of.items():
                layer = self.layers[lid]
                key = key_of_slot[slot] = f"{layer.name}:{layer.outputs[pos].id}"
                ports.setdefault(key, key)
                for tensor in layer.outputs[pos].names:
                    tensors.setdefault(tensor, key)
            for spec, slot in zip(self.outputs, self.output_slots):
                tensors.setdefault(spec.name, key_of_slot[slot])
            keys: dict[str, Any] = {**ports, **{f"port:{k}": v for k, v in ports.items()},
                                    **{f"tensor:{k}": v for k, v in tensors.items()}}
            for name, key in tensors.items():
                other = ports.get(name)
                keys[name] = key if other is None or other == key else (key, other)
            self._keys = keys
        return self._keys

    def ambiguous_names(self) -> frozenset[str]:
        """The tensor names that are also the address of another port ("<layer>:<port id>")."""
        return frozenset(name for name, key in self._tensor_keys().items() if isinstance(key, tuple))

    def _execute_plain(self, values: list[Any], donated: frozenset[int],
                       entries: list[tuple] | None = None) -> list[Any]:
        """The steps of a run nothing watches (no hook, record, timing, strict mode or precision
        emulation), or the given `entries` of `_plain_entries`: what `_execute`'s loop does,
        with each step's inputs fetched by one prepared getter and the rare cases (a buffer to
        reuse, outputs to leave out, several outputs) sent to `_call`. A step costs a tenth of
        a microsecond here, half a microsecond there, which is what a model of thousands of
        small layers spends."""
        step = None
        try:
            for compute, fetch, out, release, call, step in self._plain_steps() if entries is None else entries:
                if call is not None:
                    self._call(call, values, donated)
                else:
                    value = compute(*fetch(values))
                    values[out] = value[0] if value.__class__ is tuple else value
                    value = None  # no lingering reference: a later step may reuse the buffer
                for slot in release:
                    values[slot] = None
        except IRError as e:
            layer = step.layer
            raise e.add_context(file=self.model.source, layer=layer.ref, line=layer.line) from None
        except MemoryError:
            layer = step.layer
            raise ExecutionError("the machine ran out of memory computing this layer", file=self.model.source,
                                 layer=layer.ref, line=layer.line, label="out-of-memory") from None
        except (ValueError, IndexError, TypeError):
            self._explain(step, [values[s] for s in step.inputs])
            raise
        return values

    def _explain(self, step: Step, args: list[Any]) -> None:
        """A kernel failed with one of numpy's errors: when its inputs have shapes or types that
        inference never saw (a model's state, set or carried over between runs), the op's
        inference on the arrays themselves says what does not fit, and that is the error. When
        inference accepts them, the failure is irscatter's own, and the caller re-raises it."""
        if any(not isinstance(a, np.ndarray) for a in args):
            return
        try:
            self.ops[step.layer.id].infer(*(TensorInfo.of(a) for a in args))
        except IRError as e:
            raise e.add_context(file=self.model.source, layer=step.layer.ref, line=step.layer.line) from None

    def _plain_steps(self) -> list[tuple]:
        """The steps of a plain run (those that read kept values left out) as `_execute_plain`
        takes them, made on its first run."""
        if self._plain is None:
            self._plain = _plain_entries(self._run_steps)
        return self._plain

    def _fill_kept(self, values: list[Any]) -> None:
        """Put the kept values of Const-only layers into their slots, computing them on the
        first run that asks (`runtime/folding.py`). They are computed in a list of their own,
        where no step frees or overwrites a value to keep."""
        fold = self._fold
        if fold.values is None:
            scratch: list[Any] = [None] * self.n_slots
            for slot, array in self._consts:  # type: ignore[union-attr]
                scratch[slot] = array
            once = [replace(self.steps[i], release=tuple(s for s in self.steps[i].release if s not in fold.kept),
                            reuse_slot=None if self.steps[i].reuse_slot in fold.kept else self.steps[i].reuse_slot)
                    for i in fold.once]
            self._execute_plain(scratch, frozenset(), _plain_entries(once))
            fold.values = [(slot, read_only(scratch[slot])) for slot in sorted(fold.kept)]
        for slot, array in fold.values:
            values[slot] = array

    @staticmethod
    def _call(step: Step, values: list[Any], donated: frozenset[int]) -> None:
        """One step of `_execute_plain` that is not a simple call: as `_execute` runs it."""
        written = _written(step, donated)
        if written:
            out = step.compute(*[values[s] for s in step.inputs], written=written)
        elif step.reuse_slot is not None and (step.reuse_input in donated if step.reuse_input is not None
                                            else _owned(values, step.reuse_slot)):
            out = step.compute(*[values[s] for s in step.inputs], inplace=True)
        elif step.unused:
            out = step.compute(*[values[s] for s in step.inputs], unused=step.unused)
        else:
            out = step.compute(*[values[s] for s in step.inputs])
        if isinstance(out, tuple):
            for slot, array in zip(step.outputs, out):
                values[slot] = array
        elif step.outputs:  # a sink (Assign) may be written without an output port
            values[step.outputs[0]] = out

    def _owned(self, results: Mapping[str, Any], bound: list[np.ndarray], donated: frozenset[int]) -> Outputs:
        """The outputs, each an array of its own: never a view of a fed array (unless that
        input was donated), never sharing memory with another output, and writable (a Const's
        cached value, or a view of one, is copied)."""
        fed = [b for i, b in enumerate(bound) if i not in donated]
        return Outputs(zip(results, caller_owned(list(results.values()), fed)))

    def _run_bound(self, bound: list[np.ndarray], donated: frozenset[int], intermediate: bool,
                   hook: LayerHook | None, timings: list | None) -> dict[str, Any]:
        watching = Observer(hook, {} if intermediate else None) if (intermediate or hook is not None) else None
        token, recycling = _OBSERVER.set(watching), recycle.activate(self._recycler)
        iterations = start_iteration_budget()
        try:
            # A float that overflows to inf or turns NaN is a value the model computes, as on any
            # device, not a Python warning (`run --check-numerics` says where one first appears).
            with state.using(self.variables, exclusive=bool(self.variable_infos)), np.errstate(all="ignore"):
                values = self._execute(bound, intermediate, hook, donated, timings)
        finally:
            end_iteration_budget(iterations)
            recycle.deactivate(recycling)
            _OBSERVER.reset(token)
        if intermediate:
            record = self._recorded(values)
            record.update(watching.record)  # type: ignore[union-attr]
            return record
        return {spec.name: values[slot] for spec, slot in zip(self.outputs, self.output_slots)}

    def _recorded(self, values: list[Any], prefix: str = "") -> dict[str, np.ndarray]:
        return {
            f"{prefix}{self.layers[lid].name}:{self.layers[lid].outputs[pos].id}": np.asarray(values[slot])
            for (lid, pos), slot in self.slot_of.items()
            if values[slot] is not None
        }

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
        other._shape_cache = OrderedDict()
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
        if len(arrays) != len(self.inputs):
            raise ExecutionError(f"{len(self.inputs)} inputs expected, {len(arrays)} given", file=self.model.source)
        bound = [self._check_feed(spec, a) for spec, a in zip(self.inputs, arrays)]
        if observe is None:
            values = self._execute(bound, False, None)
        else:
            token = _OBSERVER.set(observe)
            try:
                values = self._execute(bound, observe.record is not None, observe.layer_hook())
            finally:
                _OBSERVER.reset(token)
            if observe.record is not None:
                observe.record.update(self._recorded(values, observe.prefix))
        return [values[slot] for slot in self.output_slots]

    def _const(self, layer: Layer) -> np.ndarray:
        try:
            return layer.const_value
        except IRError as e:
            raise e.add_context(file=self.model.source, layer=layer.ref, line=layer.line) from None

    def _execute(self, bound: list[np.ndarray], intermediate: bool, hook: LayerHook | None,
                 donated: frozenset[int] = frozenset(), timings: list | None = None) -> list[Any]:
        if not self.is_static:
            self._check_dynamic_shapes(bound)
        values: list[Any] = [None] * self.n_slots
        for slot, array in zip(self.param_slots, bound):
            values[slot] = array
        if self._consts is None:
            self._consts = [(slot, self._const(layer)) for slot, layer in self.const_slots]
        for slot, array in self._consts:
            values[slot] = array
        rounding = active_plan(self)  # None unless a run emulates f16 or bf16
        decompressed = decompression_steps(self)  # None unless asked for, on a model with compressed weights
        strict = strict_mode.collector()  # looked up once per run: strict mode off costs nothing per step
        # A run that sees no layer's values reads the kept values of Const-only layers; timings
        # too, since they time what a plain run computes.
        unwatched = rounding is None and decompressed is None and strict is None and hook is None and not intermediate
        if unwatched and self._fold.kept:
            self._fill_kept(values)
        if unwatched and timings is None:
            return self._execute_plain(values, donated)
        if rounding is not None:
            rounding.round_boundary(values, self.param_slots, donated)
        # Buffers are reused only when nothing can observe the overwritten input afterwards.
        reuse_allowed = not intermediate and hook is None
        for step in self._run_steps if unwatched else decompressed or self.steps:
            reuse = False
            if step.reuse_slot is not None and reuse_allowed:
                if step.reuse_input is not None:
                    reuse = step.reuse_input in donated
                else:
                    reuse = _owned(values, step.reuse_slot)
            args = [values[s] for s in step.inputs]
            if rounding is not None:
                rounding.round_inputs(step.layer.id, args, step.inputs)
            if strict is not None:
                strict.layer = step.layer
            start = time.perf_counter() if timings is not None else 0.0
            written = _written(step, donated)
            try:
                if written:  # the caller handed these buffers over for the op to update, watched or not
                    out = step.compute(*args, written=written)
                elif reuse:
                    out = step.compute(*args, inplace=True)
                elif step.unused and reuse_allowed:  # a hook or a record of values sees every output
                    out = step.compute(*args, unused=step.unused)
                else:
                    out = step.compute(*args)
            except IRError as e:
                raise e.add_context(file=self.model.source, layer=step.layer.ref, line=step.layer.line) from None
            except MemoryError:  # the limits are checked before allocating; this is the last net
                raise ExecutionError("the machine ran out of memory computing this layer", file=self.model.source,
                                     layer=step.layer.ref, line=step.layer.line, label="out-of-memory") from None
            except (ValueError, IndexError, TypeError):
                self._explain(step, args)
                raise
            if timings is not None:
                timings.append((step.layer, time.perf_counter() - start, reuse))
            if rounding is not None:
                out = rounding.round_outputs(step.layer.id, out, args)
            if isinstance(out, tuple):
                for slot, array in zip(step.outputs, out):
                    values[slot] = array
            elif step.outputs:  # a sink (Assign) may be written without an output port
                values[step.outputs[0]] = out
            if hook is not None:
                hook(step.layer, tuple(map(_read_only, args)), tuple(_read_only(values[s]) for s in step.outputs))
            args = out = array = None  # drop local references: the next step may reuse a buffer
            if not intermediate:
                for slot in step.release:
                    values[slot] = None
        if rounding is not None:
            rounding.round_results(values)
        return values


def _read_only(value: Any) -> np.ndarray:
    """A view of a value the run goes on using, for a hook to look at: writing into it would
    change a caller's fed array, or what later layers read."""
    view = np.asarray(value).view()
    view.flags.writeable = False
    return view


def _written(step: Step, donated: frozenset[int]) -> frozenset[int]:
    """The input positions of `step` that its op may update in place: those of its
    `writes_inputs` whose feed the caller donated."""
    if not step.writable or not donated:
        return frozenset()
    return frozenset(pos for pos, fed in step.writable if fed in donated)


def _distinct(name: str, result_name: str, taken: set[str]) -> str:
    """An output's key: its name, unless an earlier output has it (OpenVINO writes two Results
    of one tensor with one `output_names`), then its Result layer's name, or a numbered one.
    Every output keeps a key of its own, so none is lost from a run's outputs or their order."""
    for candidate in (name, result_name):
        if candidate not in taken:
            return candidate
    n = 2
    while f"{name}#{n}" in taken:
        n += 1
    return f"{name}#{n}"


def _with_findings(outputs: Outputs, collector: strict_mode.Collector | None) -> Outputs:
    """The outputs of a run, carrying the findings of its strict collector (if strict)."""
    if collector is not None:
        outputs.findings = collector.findings
    return outputs


def _the_only(specs: list[Any], what: str) -> Any:
    if len(specs) != 1:
        raise UsageError(f"{what}() without an index or name needs a model of one {what}; this one has {len(specs)}")
    return specs[0]


def caller_owned(values: list[Any], fed: list[np.ndarray]) -> list[Any]:
    """`values` as arrays a caller may keep and write: each is copied when it is read-only (a
    Const's cached value, or a view of one), views an array in `fed`, or shares memory with an
    earlier value of the list."""
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


def _plain_entries(steps: list[Step]) -> list[tuple]:
    """For `_execute_plain`, each step as (compute, input getter, output slot, slots to release,
    None, step), or (None, None, None, slots to release, step, step) for a step `_call` runs:
    one that may reuse a buffer, leave outputs out or write a donated input, with other than one
    output, or without inputs."""
    plain = []
    for step in steps:
        if step.reuse_slot is None and not step.unused and not step.writable and len(step.outputs) == 1 and step.inputs:
            fetch = operator.itemgetter(*step.inputs) if len(step.inputs) > 1 else _one(step.inputs[0])
            plain.append((step.compute, fetch, step.outputs[0], step.release, None, step))
        else:
            plain.append((None, None, None, step.release, step, step))
    return plain


def _one(slot: int) -> Callable[[list[Any]], tuple[Any]]:
    """A getter of one slot's value as a 1-tuple (`itemgetter` of one index gives the bare value)."""
    def fetch(values: list[Any]) -> tuple[Any]:
        return (values[slot],)
    return fetch


def _owned(values: list[Any], slot: int) -> bool:
    """Whether the array in `slot` is referenced by `values` alone and views no other array,
    so that overwriting it can change nothing anyone else sees. The reference count is
    exact: a view holds a reference to its base, as does every other slot, the caller's
    feeds and a Const's cache."""
    if sys.getrefcount(values[slot]) > _SOLE_REFERENCE:  # read before any local name holds it
        return False
    array = values[slot]
    return isinstance(array, np.ndarray) and array.base is None
