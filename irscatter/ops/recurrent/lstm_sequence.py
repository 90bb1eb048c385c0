"""LSTMSequence-5: LSTMCell-4's step over the time axis of X, forward, reverse or both ways
(`direction`), with per-row `sequence_lengths`; outputs Y, Ho and Co. The loop is
`recurrent.core.run_sequence`; the shared rules are in `recurrent.core`.

OpenVINO's opset tables hold no LSTMSequence before opset5 (its LSTMSequence-1 page describes an
op no opset names), so LSTMSequence-5 is the only version.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.recurrent.core import (
    Activations,
    Direction,
    Recurrent,
    SequenceAttrs,
    finish,
    lstm_step,
    run_sequence,
    sequence_lengths,
    to_work,
)
from irscatter.ops.recurrent.rnn_sequence import reverse_flags
from irscatter.ops.registry import register


class LSTMSequenceAttrs(SequenceAttrs):
    activations: Activations = ("sigmoid", "tanh", "tanh")
    direction: Direction


@register("LSTMSequence", 5)
class LSTMSequence(Recurrent):
    Attrs = LSTMSequenceAttrs
    attrs: LSTMSequenceAttrs
    inputs = ("X", "initial_hidden_state", "initial_cell_state", "sequence_lengths", "W", "R", "B")
    outputs = 3
    gates = 4
    states = 2
    activation_count = 3
    sequence = True

    def compute(self, x, h, c, lengths, w, r, b):
        lengths = sequence_lengths(self, lengths, x.shape[1])
        etype, (x, h, c, w, r, b) = to_work([x, h, c, w, r, b])
        f, g, h_act = self.gate_functions()
        with np.errstate(all="ignore"):
            return finish(etype, run_sequence(lstm_step(f, g, h_act), x, (h, c), lengths, w, r, b,
                                              reverse_flags(self.attrs.direction)))
