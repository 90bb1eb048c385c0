"""Assign-3 and Assign-6: write a model variable for the next run.

An Assign is a sink: no Result needs it, yet it always runs, as in OpenVINO's Model, where it is
listed among the sinks. Its value becomes the variable's at the end of a successful run (see
`ops/state/core.py`). The optional output is the value itself.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register
from irscatter.ops.state import core


@register("Assign", 3)
class Assign(Op):
    class Attrs(OpAttrs):
        variable_id: str
    attrs: Attrs

    inputs = ("new_value",)
    foldable = False  # writing the state is its purpose: inference must never run it
    sink = True

    def __init__(self, layer) -> None:
        super().__init__(layer)
        check(self.attrs.variable_id.strip() != "", "variable-id", "variable_id must not be empty",
              port=self.port("variable_id"))

    def check_arity(self, n_inputs: int, n_outputs: int) -> None:
        check(n_inputs == 1, "input-count", f"takes 1 input (new_value), the layer has {n_inputs}")
        check(n_outputs <= 1, "output-count", f"has at most 1 output, the layer declares {n_outputs}")

    def infer(self, value: TensorInfo) -> TensorInfo:
        return TensorInfo(value.etype, value.shape)

    def compute(self, value: np.ndarray) -> np.ndarray:
        store = core.current()
        if store is not None:
            store.stage(self.attrs.variable_id, value)
        return value


@register("Assign", 6)
class Assign6(Assign):
    """Assign-6: the same layer as Assign-3; opset6 changed only how OpenVINO builds the variable."""
