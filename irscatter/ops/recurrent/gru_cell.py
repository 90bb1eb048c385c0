"""GRUCell-3: one step of a gated recurrent unit, gates z, r, h stacked in that order in W, R
and B; activations f (sigmoid) for z and r, g (tanh) for h. With `linear_before_reset` the reset
gate scales Ht-1 Rh^T + Rbh rather than Ht-1, and B holds four blocks (Wb_h and Rb_h apart).
B is optional: left out, it is zero. The shared rules are in `recurrent.core`.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import IRBool
from irscatter.ops.recurrent.core import Activations, Recurrent, RecurrentAttrs, finish, gru_step, run_cell, to_work
from irscatter.ops.registry import register


class GRUCellAttrs(RecurrentAttrs):
    activations: Activations = ("sigmoid", "tanh")
    linear_before_reset: IRBool = False


@register("GRUCell", 3)
class GRUCell(Recurrent):
    Attrs = GRUCellAttrs
    attrs: GRUCellAttrs
    inputs = ("X", "initial_hidden_state", "W", "R", "B")
    optional_inputs = 1
    gates = 3
    activation_count = 2

    def bias_blocks(self) -> int:
        return 4 if self.attrs.linear_before_reset else 3

    def compute(self, x: np.ndarray, h: np.ndarray, w: np.ndarray, r: np.ndarray,
                b: np.ndarray | None = None) -> np.ndarray:
        etype, (x, h, w, r) = to_work([x, h, w, r])
        b = np.zeros(self.bias_blocks() * h.shape[-1], dtype=x.dtype) if b is None else np.asarray(b, dtype=x.dtype)
        f, g = self.gate_functions()
        with np.errstate(all="ignore"):
            return finish(etype, run_cell(gru_step(f, g, self.attrs.linear_before_reset), x, (h,), w, r, b))[0]
