"""Sub-graphs: the `<body>` of an If, a Loop or a TensorIterator, run as a function of tensors.

A body is compiled once, with every Parameter's shape left open (its declared element type
kept), because the owning layer decides the shapes: OpenVINO, too, overwrites a body
Parameter's shape with that of the tensor mapped onto it. Inference of the owner then runs
the body's inference with the outer shapes (`infer`), and each call (`run`) re-infers only
when the fed shapes change (the interpreter's shape cache), so a shape error inside still
names the inner layer before any kernel runs.

A body's layers are observed like the model's own: with `run(intermediate=True)` or a hook,
every inner value is reported under a path that says which layer, which body and which
iteration it came from: `"<outer layer name>/<body>[<iteration>]/<inner layer name>:<port>"`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np

from irscatter.errors import IRError
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Body, Layer
from irscatter.ir.shapes import PartialShape
from irscatter.ops import registry
from irscatter.ops.base import TensorInfo
from irscatter.ops.common import strict
from irscatter.runtime.interpreter import CompiledModel, Observer, observer


def _open_shape(layer: Layer) -> Layer:
    """A body Parameter with its shape left open. Its attributes as written must still be valid
    (a shape of "abc" is a defect however the owner shapes the Parameter): its op is made once
    from them, which raises what is wrong, naming the layer."""
    if layer.type != "Parameter":
        return layer
    registry.instantiate(layer)
    return layer.copy_with(attrs={**layer.attrs, "shape": "..."})


def _declared_shape(layer: Layer) -> PartialShape:
    return PartialShape.model_validate(layer.attrs.get("shape", "..."))  # (parsed by `_open_shape` already)


class Subgraph:
    """A compiled `<body>`: tensors in by body Parameter id, tensors out by body Result id."""

    def __init__(self, body: Body) -> None:
        layers = body.graph.layers
        try:
            self.model = CompiledModel(body.as_model([_open_shape(x) for x in layers]))
        except IRError as e:
            raise inside(e) from None
        self.parameter_ids: list[int] = [spec.layer.id for spec in self.model.inputs]
        self.result_ids: list[int] = [spec.layer.id for spec in self.model.outputs]
        by_id = {x.id: x for x in layers}
        self.declared: dict[int, TensorInfo] = {  # the Parameters as written
            spec.layer.id: TensorInfo(spec.etype, _declared_shape(by_id[spec.layer.id])) for spec in self.model.inputs}
        self.layers = self.model.graph.layers

    def may_vary(self, result_id: int, varying: Collection[int]) -> bool:
        """Whether the body Result's value may differ from one run to the next: it depends on one
        of the body Parameters `varying`, or on a layer that is not a function of its inputs
        alone (a ReadValue) or runs a body of its own (taken to vary, unexamined)."""
        graph, seen, todo = self.model.graph, set(), [result_id]
        while todo:
            lid = todo.pop()
            if lid in seen:
                continue
            seen.add(lid)
            if lid in varying or not graph.op(lid).foldable:
                return True
            todo.extend(src[0] for src in graph.inputs_of(lid))
        return False

    def parameter_type(self, pid: int) -> ElementType:
        return self.declared[pid].etype

    def infer(self, given: Mapping[int, TensorInfo], scope: str | None = None) -> dict[int, TensorInfo]:
        """The Results' types and shapes when the Parameters hold `given` (the declared type and
        an open shape for a Parameter left out)."""
        overrides = {pid: given.get(pid, TensorInfo(self.declared[pid].etype, PartialShape.dynamic_rank()))
                     for pid in self.parameter_ids}
        try:
            infos = self.model.graph.infer(overrides)
        except IRError as e:
            raise inside(e, scope) from None
        return {spec.layer.id: infos[self.model.graph.returned(spec.layer.id)] for spec in self.model.outputs}

    def run(self, feeds: Mapping[int, np.ndarray], owner: str, scope: str) -> dict[int, np.ndarray]:
        """Run once. `owner` is the outer layer's name, `scope` which body and iteration this is
        (`"body[3]"`): messages name the scope, observed values the path of both."""
        arrays = [feeds[pid] for pid in self.parameter_ids]
        watching = observer()
        try:
            with strict.inside(scope):  # a strict finding in here names the outer layer, then this body
                if watching is None:
                    outs = self.model.run_positional(arrays)
                else:
                    outs = self.model.run_positional(arrays, observe=watching.enter(owner, scope))
        except IRError as e:
            raise inside(e, scope) from None
        return dict(zip(self.result_ids, outs))


def inside(e: IRError, scope: str | None = None) -> IRError:
    """An error of an inner layer, retold for the outer layer (which the interpreter adds): the
    message names the inner layer, its port and the iteration."""
    where = f"{e.layer}" + (f" {e.port}" if e.port else "") if e.layer else ""
    if e.line is not None and e.layer:
        where += f" (line {e.line})"
    body = f"<{scope}>" if scope else "its <body>"
    message = f"in {body}{', ' + where if where else ''}: {e.message}"
    return type(e)(message, label=e.label)


__all__ = ["Observer", "Subgraph", "inside"]
