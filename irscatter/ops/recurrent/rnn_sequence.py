"""RNNSequence-5: RNNCell-1's step over the time axis of X, forward, reverse or both ways
(`direction`), with per-row `sequence_lengths`. The loop, the masking past each length and the
reverse order are `recurrent.core.run_sequence`; the shared rules are in `recurrent.core`.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.recurrent.core import (
    Activations,
    Direction,
    Recurrent,
    SequenceAttrs,
    finish,
    rnn_step,
    run_sequence,
    sequence_lengths,
    to_work,
)
from irscatter.ops.registry import register


class RNNSequenceAttrs(SequenceAttrs):
    activations: Activations = ("tanh",)
    direction: Direction


def reverse_flags(direction: str) -> tuple[bool, ...]:
    """Which directions of a sequence run backwards: bidirectional is forward then reverse."""
    return {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}[direction]


@register("RNNSequence", 5)
class RNNSequence(Recurrent):
    Attrs = RNNSequenceAttrs
    attrs: RNNSequenceAttrs
    inputs = ("X", "H", "sequence_lengths", "W", "R", "B")
    outputs = 2
    gates = 1
    activation_count = 1
    sequence = True

    def compute(self, x, h, lengths, w, r, b):
        lengths = sequence_lengths(self, lengths, x.shape[1])
        etype, (x, h, w, r, b) = to_work([x, h, w, r, b])
        (f,) = self.gate_functions()
        with np.errstate(all="ignore"):
            return finish(etype, run_sequence(rnn_step(f), x, (h,), lengths, w, r, b,
                                              reverse_flags(self.attrs.direction)))
