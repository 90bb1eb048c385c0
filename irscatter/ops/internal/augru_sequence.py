"""AUGRUSequence (domain `ie_internal_opset`): AUGRUCell's step over the time axis of X, forward
only: X [batch, seq_length, input], H_t [batch, 1, hidden], sequence_lengths [batch] (any
integer type), W [1, 3 * hidden, input], R [1, 3 * hidden, hidden], B [1, 3 * hidden] and the
attention scores A [batch, seq_length, 1], one per step. Outputs Y [batch, 1, seq_length,
hidden] and Ho [batch, 1, hidden].

The domain is the one OpenVINO writes: `ov::op::internal::AUGRUSequence` declares
`OPENVINO_OP("AUGRUSequence", "ie_internal_opset", RNNCellBase)` in
src/common/transformations/include/ov_ops/augru_sequence.hpp. No transformation of the pinned
OpenVINO makes it from a model (the CPU plugin runs it when it is given one).

The loop is `ops/recurrent/core.run_sequence` with the attention column appended to each
step's X W^T, so GRUSequence-5's rules hold: Y is zero past a row's length, Ho is the state
after its last valid step (zeros for a length of 0, as OpenVINO computes), a length below 0 or
above seq_length is refused when the op runs. The fixed attributes and the A checks are
AUGRUCell's (`augru_cell.AttentionalGRU`).

The page comes in two forms, augru-sequence.rst and augru-sequence.md: the same text, the
Markdown one linking GRUSequence's Markdown page and writing its code blocks in Markdown; they
say nothing different about the op.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.internal.augru_cell import DOMAIN, AttentionalGRU, AUGRUCellAttrs
from irscatter.ops.recurrent.core import (
    Direction,
    SequenceAttrs,
    augru_step,
    finish,
    run_sequence,
    sequence_lengths,
    to_work,
)
from irscatter.ops.registry import register


class AUGRUSequenceAttrs(AUGRUCellAttrs, SequenceAttrs):
    """AUGRUCell's attributes and the direction, which only forward may be."""

    direction: Direction = "forward"


@register("AUGRUSequence", 1, domain=DOMAIN)
class AUGRUSequence(AttentionalGRU):
    Attrs = AUGRUSequenceAttrs
    attrs: AUGRUSequenceAttrs
    inputs = ("X", "initial_hidden_state", "sequence_lengths", "W", "R", "B", "A")
    outputs = 2
    sequence = True

    def compute(self, x, h, lengths, w, r, b, a):
        lengths = sequence_lengths(self, lengths, x.shape[1])
        etype, (x, h, w, r, b, a) = to_work([x, h, w, r, b, a])
        f, g = self.gate_functions()
        with np.errstate(all="ignore"):
            return finish(etype, run_sequence(augru_step(f, g), x, (h,), lengths, w, r, b, (False,), columns=a))
