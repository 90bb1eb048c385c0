"""LSTMCell-1 and LSTMCell-4: one step of a long short-term memory cell, gates f, i, c, o
stacked in that order in W, R and B (B optional, zero when left out); activations f (sigmoid)
for the gates, g (tanh) for the candidate and h (tanh) for the cell state. Outputs Ho and Co.

LSTMCell-1 also has OpenVINO's peepholes and `input_forget` (its spec page names neither; they
are OpenVINO's op definition and core reference): an optional 7th input P [3 * hidden] = [Pf,
Pi, Po] adds Pf . Ct-1 to the f gate, Pi . Ct-1 to the i gate and Po . Ct to the o gate before
their activations (P left out is zero), and `input_forget` makes it = 1 - ft. OpenVINO's CPU
plugin ignores both (it runs LSTMCell-1 as LSTMCell-4); irscatter follows the reference.
`weights_format` names the gate order of W, R and B; OpenVINO's core reference computes "fico"
only (the spec's order) and refuses the others, and so does irscatter. The shared rules are in
`recurrent.core`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import numpy as np

from irscatter.ops.base import IRBool, Lower, TensorInfo, check
from irscatter.ops.recurrent.core import (
    Activations,
    Recurrent,
    RecurrentAttrs,
    finish,
    lstm_step,
    run_cell,
    to_work,
)
from irscatter.ops.registry import register


class LSTMCellAttrs(RecurrentAttrs):
    activations: Activations = ("sigmoid", "tanh", "tanh")


@register("LSTMCell", 4)
class LSTMCell4(Recurrent):
    Attrs = LSTMCellAttrs
    attrs: LSTMCellAttrs
    inputs: ClassVar[tuple[str, ...]] = ("X", "initial_hidden_state", "initial_cell_state", "W", "R", "B")
    optional_inputs = 1
    outputs = 2
    gates = 4
    states = 2
    activation_count = 3

    def compute(self, x, h, c, w, r, b=None, p=None, *, input_forget: bool = False):
        etype, (x, h, c, w, r, b, p) = to_work([x, h, c, w, r, b, p])
        if b is None:
            b = np.zeros(4 * h.shape[-1], dtype=x.dtype)
        f, g, h_act = self.gate_functions()
        with np.errstate(all="ignore"):
            return finish(etype, run_cell(lstm_step(f, g, h_act, p, input_forget), x, (h, c), w, r, b))


class LSTMCell1Attrs(LSTMCellAttrs):
    input_forget: IRBool = False
    weights_format: Annotated[Literal["fico", "icof", "ifco", "ifoc", "iofc"], Lower] = "fico"


@register("LSTMCell", 1)
class LSTMCell(LSTMCell4):
    labels = {
        "weights-format": "LSTMCell-1's weights_format names a gate order other than fico",
        "peepholes-shape": "LSTMCell-1's peepholes P are not a 1-D tensor of 3 * hidden_size",
    }

    Attrs = LSTMCell1Attrs
    attrs: LSTMCell1Attrs
    inputs = ("X", "initial_hidden_state", "initial_cell_state", "W", "R", "B", "P")
    optional_inputs = 2

    def infer(self, *infos: TensorInfo):
        check(self.attrs.weights_format == "fico", "weights-format",
              f'weights_format="{self.attrs.weights_format}" is not computed: the gates of W, R and B must be '
              f'in the order f, i, c, o ("fico")', port=self.port("weights_format"))
        out = super().infer(*infos)
        if len(infos) == 7 and infos[6].shape.rank_is_static:
            size = 3 * self.attrs.hidden_size
            check(infos[6].shape[0].contains(size), "peepholes-shape",
                  f"P must have shape [{size}] (3 * hidden_size), found {infos[6].shape}", port=self.port("P"))
        return out

    def compute(self, x, h, c, w, r, b=None, p=None):
        return super().compute(x, h, c, w, r, b, p, input_forget=self.attrs.input_forget)
