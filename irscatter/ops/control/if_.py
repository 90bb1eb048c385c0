"""If-8: run one of two bodies, chosen by a boolean condition.

Input 0 is the condition (a boolean scalar or 1-element tensor); each body's port map says
which of the other inputs it takes and which outputs its Results fill. Inference gives the
chosen body's types and shapes when the condition is a known constant, and otherwise shapes
that allow both (the element types of the two must agree).

The module is `if_.py` because `if` is a Python keyword.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo, check, compile_subgraph
from irscatter.ops.control.core import (
    body_of,
    check_parameter_type,
    every_output_filled,
    every_parameter_fed,
    input_maps,
    merge_shapes,
    merge_types,
    output_maps,
)
from irscatter.ops.registry import register

_BRANCHES = ("then_body", "else_body")


@register("If", 8)
class If(Op):
    inputs = ("cond", "inputs")
    variadic = True
    foldable = False
    labels = {
        "if-condition": "the condition is not a boolean scalar or 1-element tensor",
        "if-branch-type": "the two bodies give one output different element types",
    }

    def __init__(self, layer) -> None:
        super().__init__(layer)
        self.branches = []
        for name in _BRANCHES:
            body = body_of(self, name)
            ins, outs = input_maps(layer, body, name), output_maps(layer, body, name)
            check(all(m.position >= 1 for m in ins), "port-map",
                  f"<{name}>'s port map must feed its Parameters from inputs 1 and up (input 0 is the condition)")
            every_output_filled(layer, outs, name)
            compiled = compile_subgraph(body)
            every_parameter_fed(compiled.parameter_ids, ins, name)
            self.branches.append((name, ins, outs, compiled))

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        check(n_inputs >= 1, "input-count", "takes the condition and the bodies' inputs, the layer has no input")

    def _branch_infos(self, branch, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        name, ins, outs, body = branch
        given = {}
        for m in ins:
            info = inputs[m.position]
            check_parameter_type(body.parameter_type(m.parameter), info.etype, f"input {m.position}", m.parameter)
            given[m.parameter] = info
        results = body.infer(given, name)
        infos: list[TensorInfo] = [None] * len(self.layer.outputs)  # type: ignore[list-item]
        for m in outs:
            if m.position is not None:
                infos[m.position] = results[m.result]
        return infos

    def infer(self, cond: TensorInfo, *inputs: TensorInfo) -> tuple[TensorInfo, ...]:
        check(cond.etype in (ElementType.boolean, ElementType.dynamic), "if-condition",
              f"the condition is {cond.etype}; it must be boolean", port=self.port("cond"))
        if cond.shape.is_static:
            check(cond.shape.to_tuple() in ((), (1,)), "if-condition",
                  f"the condition has shape {cond.shape}; it must be a scalar or hold 1 element", port=self.port("cond"))
        everything = (cond, *inputs)
        then_infos, else_infos = (self._branch_infos(b, everything) for b in self.branches)
        if cond.value is not None:
            return tuple(then_infos if bool(np.asarray(cond.value).reshape(-1)[0]) else else_infos)
        merged = []
        for position, (a, b) in enumerate(zip(then_infos, else_infos)):
            etype = merge_types(a.etype, b.etype)
            check(etype is not None, "if-branch-type", f"then_body gives {a.etype} and else_body {b.etype}",
                  port=f"output {position}")
            merged.append(TensorInfo(etype, merge_shapes(a.shape, b.shape)))  # type: ignore[arg-type]
        return tuple(merged)

    def compute(self, cond: np.ndarray, *arrays: np.ndarray):
        if cond.size != 1:
            raise ExecutionError(f"the condition has {cond.size} elements; it must have 1", label="if-condition",
                                 port=self.port("cond"))
        name, ins, outs, body = self.branches[0 if bool(cond.reshape(-1)[0]) else 1]
        everything = (cond, *arrays)
        results = body.run({m.parameter: everything[m.position] for m in ins}, self.layer.name, name)
        values: list[np.ndarray] = [None] * len(self.layer.outputs)  # type: ignore[list-item]
        for m in outs:
            if m.position is not None:
                values[m.position] = results[m.result]
        return tuple(values) if len(values) != 1 else values[0]
