"""What If, Loop and TensorIterator share: reading the port map, slicing inputs into parts and
joining parts into outputs, and merging what several bodies (or iterations) may produce.

A port map ties the owner's ports to its body: an `<input>` entry names an input port of the
layer (by port id) and the body Parameter it feeds; an `<output>` entry names a body Result and
the output port it fills. With `axis`, an input is cut into parts along that axis, one per
iteration, and an output is the concatenation of every iteration's value; without it, an input
is the same in every iteration and an output is the last iteration's value. A back edge feeds a
Result's value into a Parameter for the next iteration.

The `loop_iterations` limit bounds the iterations of a whole model run, not of one loop: a
Loop nested in another runs all its iterations in each of the outer one's, so loops of a
thousand iterations each, three deep, would make a billion. Every iteration of every loop in
the run spends from one budget (`IterationBudget`), which the compiled model starts per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import Token
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Body, Layer, PortMapEntry
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import current as current_limits
from irscatter.limits import tensor_size_problem
from irscatter.ops import context
from irscatter.ops.base import Op, TensorInfo, check, compile_subgraph, required


@dataclass(frozen=True)
class Slicing:
    """How a port is cut into parts (an input) or joined from them (an output)."""

    axis: int
    start: int = 0
    end: int = -1
    stride: int = 1
    part_size: int = 1

    @classmethod
    def of(cls, entry: PortMapEntry) -> Slicing | None:
        if entry.axis is None:
            return None
        return cls(entry.axis, 0 if entry.start is None else entry.start, -1 if entry.end is None else entry.end,
                   1 if entry.stride is None else entry.stride, 1 if entry.part_size is None else entry.part_size)

    def normalized_axis(self, rank: int, port: str) -> int:
        check(-rank <= self.axis < rank if rank else False, "slice-axis",
              f"axis {self.axis} is outside a tensor of rank {rank}", port=port)
        return self.axis % rank

    def bounds(self, dim: int) -> tuple[int, int]:
        """The first and last index covered (both included), as OpenVINO reads start and end."""
        start = self.start + dim if self.start < 0 else self.start
        end = self.end + dim if self.end < 0 else self.end
        return start, end

    def check_steps(self, port: str) -> None:
        """stride and part_size as any slicing or joining needs them (attributes only)."""
        check(self.stride != 0 and self.part_size > 0, "slice-parts",
              f"stride must not be 0 and part_size must be positive (stride {self.stride}, part_size "
              f"{self.part_size})", port=port)

    def count(self, dim: int, port: str) -> int:
        """How many parts an axis of size `dim` is cut into: |end - start| + 1 indices, in parts of
        part_size (OpenVINO's rule)."""
        self.check_steps(port)
        if dim == 0:
            return 0
        start, end = self.bounds(dim)
        return (abs(end - start) + 1) // self.part_size

    def begins(self, dim: int, port: str) -> range:
        """Where each part starts on an axis of size `dim`, in the order the iterations take them;
        an error (at inference, where the size is known) when a part reaches outside the axis.
        A range, checked by its ends: start and end may be any integers a file holds (+-1e18),
        and parts that fit the axis are no more than its size."""
        n = self.count(dim, port)
        if n == 0:
            return range(0)
        start, _ = self.bounds(dim)
        # Forward, part i starts at start + i*stride; backward, start is the last index of the
        # first part and the parts walk down by |stride|.
        first = start if self.stride > 0 else start - self.part_size + 1
        last = first + (n - 1) * self.stride
        if min(first, last) < 0 or max(first, last) + self.part_size > dim:
            raise ExecutionError(f"start {self.start}, end {self.end}, stride {self.stride} and part_size "
                                 f"{self.part_size} reach outside the axis of size {dim}", label="slice-parts",
                                 port=port)
        return range(first, last + (1 if self.stride > 0 else -1), self.stride)

    def parts(self, array: np.ndarray, port: str) -> Parts:
        """The parts, in the order the iterations take them: each a view, made when its
        iteration asks for it (a million iterations need not hold a million views at once)."""
        axis = self.normalized_axis(array.ndim, port)
        return Parts(array, axis, self.begins(array.shape[axis], port), self.part_size)

    def part_shape(self, shape: PartialShape, port: str) -> PartialShape:
        self.check_steps(port)
        if not shape.rank_is_static:
            return shape
        axis = self.normalized_axis(shape.rank, port)
        dims = list(shape.ranked_dims)
        if dims[axis].is_static:
            self.begins(dims[axis].min, port)  # the parts fit the axis: known before any run
        dims[axis] = Dimension.static(self.part_size)
        return PartialShape.model_construct(dims=tuple(dims))

    def join(self, values: Sequence[np.ndarray], port: str) -> np.ndarray:
        """The iterations' values concatenated along the axis (scalars as 1-element vectors),
        last iteration first when the stride is negative."""
        values = [v.reshape(1) if v.ndim == 0 else v for v in values]
        axis = self.normalized_axis(values[0].ndim, port)
        if self.stride < 0:
            values = values[::-1]
        try:
            return np.concatenate(values, axis=axis)
        except ValueError:
            shapes = sorted({tuple(v.shape) for v in values})
            raise ExecutionError(f"the iterations' values cannot be concatenated along axis {self.axis}: their "
                                 f"shapes differ ({', '.join(str(list(s)) for s in shapes[:4])})",
                                 label="slice-axis", port=port) from None

    def joined_shape(self, shape: PartialShape, iterations: int | None, port: str) -> PartialShape:
        self.check_steps(port)
        if not shape.rank_is_static:
            return shape
        dims = list(shape.ranked_dims) if shape.rank else [Dimension.static(1)]
        axis = self.normalized_axis(len(dims), port)
        d = dims[axis]
        dims[axis] = Dimension.static(iterations * d.min) if iterations is not None and d.is_static \
            else Dimension.dynamic()
        return PartialShape.model_construct(dims=tuple(dims))


@dataclass(frozen=True)
class Parts:
    """An input cut into parts along `axis`, one view per start in `begins`."""

    array: np.ndarray
    axis: int
    begins: range
    size: int

    def __len__(self) -> int:
        return len(self.begins)

    def __getitem__(self, i: int) -> np.ndarray:
        index = [slice(None)] * self.array.ndim
        index[self.axis] = slice(self.begins[i], self.begins[i] + self.size)
        return self.array[tuple(index)]


@dataclass(frozen=True)
class InputMap:
    position: int  # of the owner's input
    parameter: int  # body Parameter id
    slicing: Slicing | None
    purpose: str | None = None


@dataclass(frozen=True)
class OutputMap:
    position: int | None  # of the owner's output (None: feeds nothing outside, e.g. a condition)
    result: int  # body Result id
    slicing: Slicing | None
    purpose: str | None = None


def body_of(op: Op, name: str) -> Body:
    return required(op.layer.bodies.get(name), "no-body", f"the layer has no <{name}>")


def _kinds(body: Body) -> dict[int, str]:
    return {layer.id: layer.type for layer in body.graph.layers}


def input_maps(layer: Layer, body: Body, name: str) -> list[InputMap]:
    kinds = _kinds(body)
    out = []
    for entry in body.inputs:
        if entry.external_port_id == -1:
            position = -1  # fed by the owner itself (a Loop's current iteration)
        else:
            position = required(layer.input_position(entry.external_port_id), "port-map",
                                f"<{name}>'s port map names input port {entry.external_port_id}, which the layer lacks")
        check(kinds.get(entry.internal_layer_id) == "Parameter", "port-map",
              f"<{name}>'s port map feeds layer {entry.internal_layer_id}, which is not a Parameter of the body")
        out.append(InputMap(position, entry.internal_layer_id, Slicing.of(entry), entry.purpose))
    return out


def output_maps(layer: Layer, body: Body, name: str) -> list[OutputMap]:
    kinds = _kinds(body)
    out = []
    for entry in body.outputs:
        position: int | None = None
        if entry.external_port_id != -1:
            position = required(layer.output_position(entry.external_port_id), "port-map",
                                f"<{name}>'s port map fills output port {entry.external_port_id}, which the layer lacks")
        check(kinds.get(entry.internal_layer_id) == "Result", "port-map",
              f"<{name}>'s port map reads layer {entry.internal_layer_id}, which is not a Result of the body")
        out.append(OutputMap(position, entry.internal_layer_id, Slicing.of(entry), entry.purpose))
    return out


def back_edges(body: Body) -> list[tuple[int, int]]:
    """(Result id, Parameter id) pairs."""
    kinds = _kinds(body)
    for edge in body.back_edges:
        check(kinds.get(edge.from_layer) == "Result" and kinds.get(edge.to_layer) == "Parameter", "back-edge",
              f"a back edge runs from layer {edge.from_layer} ({kinds.get(edge.from_layer, 'none')}) to layer "
              f"{edge.to_layer} ({kinds.get(edge.to_layer, 'none')}); it must run from a Result to a Parameter")
    return [(edge.from_layer, edge.to_layer) for edge in body.back_edges]


def every_output_filled(layer: Layer, maps: list[OutputMap], name: str) -> None:
    filled = {m.position for m in maps}
    for position, port in enumerate(layer.outputs):
        check(position in filled, "port-map", f"output port {port.id} is filled by no <{name}> port map entry",
              port=f"output {position}")


def every_parameter_fed(parameters: Sequence[int], maps: list[InputMap], name: str, *, counter: bool = False,
                        back: Sequence[tuple[int, int]] = ()) -> None:
    """Every Parameter of the body gets a value before its first run: from an input of the
    layer, or (`counter`: a Loop) as the current iteration. A back edge feeds only the runs after
    the first."""
    fed = {m.parameter for m in maps if m.position >= 0 or (counter and m.purpose == "current_iteration")}
    fed_back = {pid for _, pid in back}
    for pid in parameters:
        check(pid in fed, "port-map", f"body Parameter {pid} of <{name}> is fed by no port map entry from an input "
              "of the layer" + (": its back edge feeds only the iterations after the first" if pid in fed_back else ""))


def check_parameter_type(declared: ElementType, given: ElementType, port: str, pid: int) -> None:
    check(ElementType.dynamic in (declared, given) or declared is given, "body-input-type",
          f"{given} is mapped onto body Parameter {pid}, which is {declared}", port=port)


_Output = TypeVar("_Output")

# What a kernel returns: its one output alone, several as a tuple.
LayerOutputs = np.ndarray | tuple[np.ndarray, ...]


def by_position(outputs: dict[int, _Output], count: int) -> tuple[_Output, ...]:
    """The values of the owner's `count` outputs, from a map that fills each of them (as
    `every_output_filled` checked the port map does)."""
    return tuple(outputs[position] for position in range(count))


def merge_shapes(a: PartialShape, b: PartialShape) -> PartialShape:
    """A shape that allows both: equal dims stay, others become dynamic; ranks that differ give a
    dynamic rank."""
    if a.dims is None or b.dims is None or len(a.dims) != len(b.dims):
        return PartialShape.dynamic_rank() if a != b else a
    dims = tuple(x if x == y else Dimension(min=min(x.min, y.min), max=None if x.max is None or y.max is None
                                            else max(x.max, y.max)) for x, y in zip(a.dims, b.dims))
    return PartialShape.model_construct(dims=dims)


def merge_types(a: ElementType, b: ElementType) -> ElementType | None:
    if a is ElementType.dynamic:
        return b
    if b is ElementType.dynamic or a is b:
        return a
    return None


def info_of(array: np.ndarray, etype: ElementType) -> TensorInfo:
    return TensorInfo(etype, PartialShape.of(array.shape))


class Iterating(Op):
    """The machinery Loop and TensorIterator share: a body run once per iteration, inputs sliced
    or passed whole, back edges, and outputs taken from the last iteration or concatenated.

    A subclass says how many iterations may run (`planned_iterations`, at inference time) and
    whether to go on after each one (`go_on`)."""

    variadic = True
    foldable = False  # a body may be large; it runs when the model runs
    first_mapped_input = 0  # the inputs before it are the owner's own (a Loop's trip count, condition)
    can_stop = False  # whether something besides the sliced inputs may end the iterations
    counts_iterations = False  # whether a body Parameter may receive the current iteration (Loop)

    def __init__(self, layer: Layer) -> None:
        super().__init__(layer)
        body = body_of(self, "body")
        self.ins = input_maps(layer, body, "body")
        self.outs = output_maps(layer, body, "body")
        self.back = back_edges(body)
        self.body = compile_subgraph(body)
        every_output_filled(layer, self.outs, "body")
        every_parameter_fed(self.body.parameter_ids, self.ins, "body", counter=self.counts_iterations, back=self.back)
        self.fed_back = {pid for _, pid in self.back}

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        check(n_inputs >= self.first_mapped_input, "input-count",
              f"takes at least {self.first_mapped_input} inputs, the layer has {n_inputs}")

    def port_of(self, position: int) -> str:
        return f"input {position}"

    # --- inference ----------------------------------------------------------------------------

    def _parameter_infos(self, inputs: Sequence[TensorInfo]) -> dict[int, TensorInfo]:
        given: dict[int, TensorInfo] = {}
        for m in self.ins:
            if m.position < 0:
                continue
            info = inputs[m.position]
            port = self.port_of(m.position)
            check_parameter_type(self.body.parameter_type(m.parameter), info.etype, port, m.parameter)
            shape = m.slicing.part_shape(info.shape, port) if m.slicing else info.shape
            given[m.parameter] = TensorInfo(info.etype, shape)
        return given

    def infer_body(self, inputs: Sequence[TensorInfo], extra: dict[int, TensorInfo]) -> dict[int, TensorInfo]:
        """The body's Results once the back edges are stable: a Parameter fed back a value of
        another shape is widened to allow both, and the body inferred again."""
        given = {**self._parameter_infos(inputs), **extra}
        for _ in range(4):
            results = self.body.infer(given, "body")
            changed = False
            for rid, pid in self.back:
                now, back = given.get(pid), results[rid]
                if now is None:
                    continue
                check(merge_types(now.etype, back.etype) is not None, "back-edge-type",
                      f"the back edge from body Result {rid} feeds {back.etype} into body Parameter {pid}, "
                      f"which receives {now.etype}")
                merged = merge_shapes(now.shape, back.shape)
                if merged != now.shape:
                    given[pid] = TensorInfo(now.etype, merged)
                    changed = True
            if not changed:
                return results
        for _, pid in self.back:  # did not settle: the fed-back shapes keep changing
            if pid in given:
                given[pid] = TensorInfo(given[pid].etype, PartialShape.dynamic_rank())
        return self.body.infer(given, "body")

    def sliced_count(self, inputs: Sequence[TensorInfo]) -> int | None:
        """The iterations the sliced inputs allow (None: unknown, or no sliced input)."""
        counts = []
        for m in self.ins:
            if m.slicing is None or m.position < 0:
                continue
            shape = inputs[m.position].shape
            port = self.port_of(m.position)
            if not shape.rank_is_static:
                return None
            dim = shape[m.slicing.normalized_axis(shape.rank, port)]
            if not dim.is_static:
                return None
            counts.append(m.slicing.count(dim.min, port))
        return min(counts) if counts else None

    def output_infos(self, results: dict[int, TensorInfo], iterations: int | None,
                     inputs: Sequence[TensorInfo]) -> tuple[TensorInfo, ...]:
        """The layer's outputs. A last-iteration output whose Result a back edge carries is, when
        no iteration may run, the value fed into that edge's Parameter: its type and shape count
        too (alone when no iteration runs, merged with the Result's when that is not known)."""
        initial = self._parameter_infos(inputs) if iterations in (None, 0) else {}
        carried = dict(self.back)
        infos: dict[int, TensorInfo] = {}
        for m in self.outs:
            if m.position is None:
                continue
            info = results[m.result]
            port = f"output {m.position}"
            if m.slicing:
                info = TensorInfo(info.etype, m.slicing.joined_shape(info.shape, iterations, port))
            elif (fed := carried.get(m.result)) is not None and (first := initial.get(fed)) is not None:
                info = first if iterations == 0 else TensorInfo(
                    merge_types(first.etype, info.etype) or info.etype, merge_shapes(first.shape, info.shape))
            infos[m.position] = TensorInfo(info.etype, info.shape)
        return by_position(infos, len(self.layer.outputs))

    # --- running ------------------------------------------------------------------------------

    def iterate(self, arrays: Sequence[np.ndarray], limit: int | None, first: dict[int, np.ndarray]) -> LayerOutputs:
        budget: IterationBudget | None = context.current().iterations
        if budget is not None:
            return self._iterate(arrays, limit, first, budget)
        budget = IterationBudget()  # a loop run on its own (ops.functional): its own budget
        token = start_iteration_budget(budget)
        try:
            return self._iterate(arrays, limit, first, budget)
        finally:
            end_iteration_budget(token)

    def _iterate(self, arrays: Sequence[np.ndarray], limit: int | None, first: dict[int, np.ndarray],
                 budget: IterationBudget) -> LayerOutputs:
        """Run the body up to `limit` times (None: until `go_on` says stop) and build the outputs.
        `first` holds the owner's own Parameters (a Loop's current iteration), updated by
        `advance` after each iteration."""
        feeds: dict[int, np.ndarray] = dict(first)
        parts: dict[int, Parts] = {}
        for m in self.ins:
            if m.position < 0:
                continue
            if m.slicing is None:
                feeds[m.parameter] = arrays[m.position]
            else:
                parts[m.parameter] = m.slicing.parts(arrays[m.position], self.port_of(m.position))
        if parts:
            counts = min(len(p) for p in parts.values())
            limit = counts if limit is None else min(limit, counts)
        if limit is None and not self.can_stop:
            raise ExecutionError("the number of iterations is unbounded: no input is sliced and nothing else "
                                 "stops the loop", label="iteration-count")
        most = current_limits().loop_iterations
        if limit is not None and limit > most and not self.can_stop:  # refused before the first iteration
            raise ExecutionError(f"the loop would run {limit} iterations, more than {most} (irscatter.limits: "
                                 f"loop_iterations)", label="iteration-limit")
        joined: dict[int, list[np.ndarray]] = {m.result: [] for m in self.outs if m.slicing is not None}
        joined_size: dict[int, int] = dict.fromkeys(joined, 0)
        last: dict[int, np.ndarray] | None = None
        i = 0
        while limit is None or i < limit:
            budget.spend()
            for pid, pieces in parts.items():
                feeds[pid] = pieces[i]
            last = self.body.run(feeds, self.layer.name, f"body[{i}]")
            for rid, values in joined.items():
                values.append(last[rid])
                joined_size[rid] += last[rid].size
                self._check_joined(rid, joined_size[rid], last[rid].dtype)
            i += 1
            for rid, pid in self.back:
                feeds[pid] = last[rid]
            if i == 1 and (limit is None or limit - 1 > budget.left) and self.never_stops(last):
                # (a million iterations of a small body take most of a minute to find out)
                bound = "" if limit is None else \
                    f", and {limit} iterations are more than the run has left of its {budget.limit} " \
                    f"(irscatter.limits: loop_iterations)"
                raise ExecutionError("the loop would never stop: its body's execution condition is true and reads "
                                     f"nothing that changes from one iteration to the next{bound}",
                                     label="iteration-limit")
            if not self.go_on(last, i, feeds):
                break
        return self._outputs(last, joined, feeds, arrays)

    def _check_joined(self, rid: int, elements: int, dtype: np.dtype) -> None:
        """A concatenated output grows by one iteration's value each iteration: it is held to the
        tensor limits as it grows, not once the loop has filled memory with its parts."""
        if (problem := tensor_size_problem((elements,), dtype.itemsize)) is not None:
            position = next(m.position for m in self.outs if m.result == rid)
            raise ExecutionError(f"the iterations' values concatenated: {problem}", label="tensor-limit",
                                 port=f"output {position}")

    def go_on(self, results: dict[int, np.ndarray], done: int, feeds: dict[int, np.ndarray]) -> bool:
        return True

    def never_stops(self, results: dict[int, np.ndarray]) -> bool:
        """Whether, after a first iteration that gave `results`, nothing in the body could ever
        end the loop (only the trip count and sliced inputs would)."""
        return False

    def _outputs(self, last: dict[int, np.ndarray] | None, joined: dict[int, list[np.ndarray]],
                 feeds: dict[int, np.ndarray], arrays: Sequence[np.ndarray]) -> LayerOutputs:
        outs: dict[int, np.ndarray] = {}
        empty_results = None
        for m in self.outs:
            if m.position is None:
                continue
            port = f"output {m.position}"
            if m.slicing is not None:
                if joined[m.result]:
                    outs[m.position] = m.slicing.join(joined[m.result], port)
                    continue
                if empty_results is None:  # no iteration ran: an empty concatenation of the right shape
                    empty_results = self.body.infer({pid: info_of(a, self.body.parameter_type(pid))
                                                     for pid, a in feeds.items()})
                info = empty_results[m.result]
                shape = m.slicing.joined_shape(info.shape, 0, port)
                if not shape.is_static:
                    raise ExecutionError("the body never ran and the shape of this concatenated output "
                                         f"cannot be told ({shape})", label="no-iteration-value", port=port)
                outs[m.position] = np.zeros(shape.to_tuple(), dtype=info.etype.dtype)
            elif last is not None:
                outs[m.position] = last[m.result]
            else:
                outs[m.position] = self._value_without_iterations(m, feeds, port)
        values = by_position(outs, len(self.layer.outputs))
        return values if len(values) != 1 else values[0]

    def _value_without_iterations(self, m: OutputMap, feeds: dict[int, np.ndarray], port: str) -> np.ndarray:
        """An output of the last iteration when none ran: the value a back edge would have fed
        (the Parameter's initial value), which is what the body's Result stands for."""
        for rid, pid in self.back:
            if rid == m.result and pid in feeds:
                return feeds[pid]
        raise ExecutionError("the body never ran, so this output (the last iteration's value of a body Result "
                             "that no back edge carries) has no value", label="no-iteration-value", port=port)


class IterationBudget:
    """The iterations the loops of one model run may still make (`loop_iterations` in all), each
    iteration of a nested loop counted in every iteration of the loops around it."""

    __slots__ = ("left", "limit")

    def __init__(self) -> None:
        self.limit = self.left = current_limits().loop_iterations

    def spend(self) -> None:
        if self.left <= 0:
            raise ExecutionError(f"the loops of this run would make more than {self.limit} iterations in all, "
                                 "a nested loop's counted in each iteration of the loop around it "
                                 "(irscatter.limits: loop_iterations)", label="iteration-limit")
        self.left -= 1


def start_iteration_budget(budget: IterationBudget) -> Token:
    """`budget` for the loops of a model run (the bodies it runs share it), in the run
    context until `end_iteration_budget`."""
    return context.enter(iterations=budget)


def end_iteration_budget(token: Token) -> None:
    context.leave(token)
