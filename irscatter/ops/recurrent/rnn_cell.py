"""RNNCell-1 (its spec page is rnn-cell-3; OpenVINO's opset1 already holds it): one step of a
plain recurrent cell, Ht = f(Xt W^T + Ht-1 R^T + B), f tanh by default. The shared rules (clip,
activations, element types, hidden_size) are in `recurrent.core`.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.recurrent.core import Activations, Recurrent, RecurrentAttrs, finish, rnn_step, run_cell, to_work
from irscatter.ops.registry import register


class RNNCellAttrs(RecurrentAttrs):
    activations: Activations = ("tanh",)


@register("RNNCell", 1)
class RNNCell(Recurrent):
    Attrs = RNNCellAttrs
    attrs: RNNCellAttrs
    inputs = ("X", "H", "W", "R", "B")
    gates = 1
    activation_count = 1

    def compute(self, x: np.ndarray, h: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray) -> np.ndarray:
        etype, (x, h, w, r, b) = to_work([x, h, w, r, b])
        (f,) = self.gate_functions()
        with np.errstate(all="ignore"):
            return finish(etype, run_cell(rnn_step(f), x, (h,), w, r, b))[0]
