"""GRUSequence-5: GRUCell-3's step over the time axis of X, forward, reverse or both ways
(`direction`), with per-row `sequence_lengths`; B is [num_directions, 3 * hidden] or, with
`linear_before_reset`, [num_directions, 4 * hidden]. The loop is `recurrent.core.run_sequence`;
the shared rules are in `recurrent.core`.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import IRBool
from irscatter.ops.recurrent.core import (
    Activations,
    Direction,
    Recurrent,
    SequenceAttrs,
    finish,
    gru_step,
    run_sequence,
    sequence_lengths,
    to_work,
)
from irscatter.ops.recurrent.rnn_sequence import reverse_flags
from irscatter.ops.registry import register


class GRUSequenceAttrs(SequenceAttrs):
    activations: Activations = ("sigmoid", "tanh")
    direction: Direction
    linear_before_reset: IRBool = False


@register("GRUSequence", 5)
class GRUSequence(Recurrent):
    Attrs = GRUSequenceAttrs
    attrs: GRUSequenceAttrs
    inputs = ("X", "initial_hidden_state", "sequence_lengths", "W", "R", "B")
    outputs = 2
    gates = 3
    activation_count = 2
    sequence = True

    def bias_blocks(self) -> int:
        return 4 if self.attrs.linear_before_reset else 3

    def compute(self, x, h, lengths, w, r, b):
        lengths = sequence_lengths(self, lengths, x.shape[1])
        etype, (x, h, w, r, b) = to_work([x, h, w, r, b])
        f, g = self.gate_functions()
        with np.errstate(all="ignore"):
            return finish(etype, run_sequence(gru_step(f, g, self.attrs.linear_before_reset), x, (h,), lengths,
                                              w, r, b, reverse_flags(self.attrs.direction)))
