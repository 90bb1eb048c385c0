"""Loop-5: a body run while the trip count and its execution condition allow.

Inputs 0 and 1 are the trip count (an integer scalar or 1-element tensor; negative means no
bound) and the condition for the first iteration. The body's `execution_condition` Result says
whether to run another one, and a body Parameter marked `current_iteration` receives the number
of the iteration (from 0). Sliced inputs bound the loop too: it stops after their last part, as
in OpenVINO's plugins (its core reference instead keeps feeding the last part).

Departures from OpenVINO's core reference, which follow the spec ("executed 0 or more times"):
a trip count of 0 or a false first condition runs no iteration, and the outputs are then the
initial values of the back-edge Parameters (an output with nothing to stand for is an error),
and concatenated outputs are empty along their axis. Concatenated outputs of a negative stride
are joined last iteration first, as TensorIterator's are.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo, check
from irscatter.ops.common.ranges import SMALL_COUNT, Bounds
from irscatter.ops.control.core import Iterating
from irscatter.ops.registry import register

_COUNTERS = (ElementType.i32, ElementType.i64)


@register("Loop", 5)
class Loop(Iterating):
    inputs = ("trip_count", "execution_condition", "inputs")
    first_mapped_input = 2
    can_stop = True
    counts_iterations = True
    labels = {
        "loop-trip-count": "the trip count is not an i32 or i64 scalar or 1-element tensor",
        "loop-condition": "a loop condition (the first, or the body's) is not a boolean scalar or 1-element tensor",
        "loop-current-iteration": "the current_iteration Parameter is not an i32 or i64 scalar or 1-element tensor",
    }

    def input_range(self, position: int, infos) -> Bounds | None:
        return SMALL_COUNT if position == 0 else None  # a few iterations (-1 would run until the condition)

    def __init__(self, layer) -> None:
        super().__init__(layer)
        conditions = [m for m in self.outs if m.purpose == "execution_condition"]
        check(len(conditions) == 1, "port-map", "the port map must mark exactly one body Result with "
              f'purpose="execution_condition" (found {len(conditions)})')
        self.condition = conditions[0].result
        counters = [m.parameter for m in self.ins if m.purpose == "current_iteration"]
        check(len(counters) <= 1, "port-map", 'the port map marks more than one body Parameter with '
              'purpose="current_iteration"')
        self.counter = counters[0] if counters else None
        if self.counter is not None:
            self.ins = [m for m in self.ins if m.parameter != self.counter or m.position >= 0]
        self.counter_info = self._counter_info() if self.counter is not None else None
        # A condition that reads no body Parameter whose value changes between iterations (fed
        # back, sliced, or the current iteration) is the same every iteration.
        varying = {pid for _, pid in self.back} | {m.parameter for m in self.ins if m.slicing is not None}
        if self.counter is not None:
            varying.add(self.counter)
        self.condition_fixed = not self.body.may_vary(self.condition, varying)

    def port_of(self, position: int) -> str:
        return self.port("trip_count") if position == 0 else \
            self.port("execution_condition") if position == 1 else f"input {position}"

    def _counter_info(self) -> TensorInfo:
        declared = self.body.declared[self.counter]
        check(declared.etype in _COUNTERS, "loop-current-iteration",
              f"the current_iteration Parameter is {declared.etype}; it must be i32 or i64")
        shape = declared.shape
        if not (shape.rank_is_static and shape.is_static):
            shape = PartialShape.of(())
        check(shape.to_tuple() in ((), (1,)), "loop-current-iteration",
              f"the current_iteration Parameter has shape {shape}; it must be a scalar or hold 1 element")
        return TensorInfo(declared.etype, shape)

    def infer(self, trip: TensorInfo, condition: TensorInfo, *inputs: TensorInfo) -> tuple[TensorInfo, ...]:
        _check_one(trip, _COUNTERS, "loop-trip-count", "the trip count", self.port("trip_count"))
        _check_one(condition, (ElementType.boolean,), "loop-condition", "the execution condition",
                   self.port("execution_condition"))
        # counter and counter_info are set together
        extra = {self.counter: self.counter_info} if self.counter is not None and self.counter_info is not None else {}
        results = self.infer_body((trip, condition, *inputs), extra)
        _check_one(results[self.condition], (ElementType.boolean,), "loop-condition", "the body's condition", None)
        everything = (trip, condition, *inputs)
        return self.output_infos(results, self._known_iterations(trip, condition, results, everything), everything)

    def _known_iterations(self, trip, condition, results, inputs) -> int | None:
        if condition.value is not None and not bool(np.asarray(condition.value).reshape(-1)[0]):
            return 0
        body_condition = results[self.condition].value
        if trip.value is None or condition.value is None or body_condition is None:
            return None
        count = int(np.asarray(trip.value).reshape(-1)[0])
        if count == 0:
            return 0
        if not bool(np.asarray(body_condition).reshape(-1)[0]):
            return 1  # the body always says stop after its first iteration
        sliced = self.sliced_count(inputs)
        if count < 0:
            return sliced
        return count if sliced is None else min(count, sliced)

    def compute(self, trip: np.ndarray, condition: np.ndarray, *rest: np.ndarray):
        count = int(trip.reshape(-1)[0])
        limit = None if count < 0 else count
        if not bool(condition.reshape(-1)[0]):
            limit = 0
        first = {}
        info = self.counter_info
        if self.counter is not None and info is not None:
            first[self.counter] = np.zeros(info.shape.to_tuple(), dtype=info.etype.dtype)
        return self.iterate((trip, condition, *rest), limit, first)

    def go_on(self, results: dict[int, np.ndarray], done: int, feeds: dict[int, np.ndarray]) -> bool:
        if self.counter is not None and self.counter not in self.fed_back:
            current = feeds[self.counter]
            feeds[self.counter] = np.full(current.shape, done, dtype=current.dtype)
        flag = results[self.condition]
        if flag.size != 1:
            raise ExecutionError(f"the body's execution condition has {flag.size} elements; it must have 1",
                                 label="loop-condition")
        return bool(flag.reshape(-1)[0])

    def never_stops(self, results: dict[int, np.ndarray]) -> bool:
        flag = results[self.condition]
        return self.condition_fixed and flag.size == 1 and bool(flag.reshape(-1)[0])


def _check_one(info: TensorInfo, types, label: str, what: str, port: str | None) -> None:
    check(info.etype in types or info.etype is ElementType.dynamic, label,
          f"{what} is {info.etype}; it must be {' or '.join(str(t) for t in types)}", port=port)
    shape = info.shape
    if shape.is_static:
        check(shape.rank <= 1 and (shape.rank == 0 or shape.to_tuple() == (1,)), label,
              f"{what} has shape {shape}; it must be a scalar or hold 1 element", port=port)
