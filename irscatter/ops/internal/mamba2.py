"""Mamba2 (domain `extension`): the state recurrence and readout of a Mamba2 mixer on inputs
discretized outside the op.

For each batch entry b, head h and step t, from `recurrent_state`:

    state[b, h] = state[b, h] * dA[b, h, t, 0, 0] + dBx[b, h, t]
    output[b, h, t] = state[b, h] @ C[b, h, t]

with the state after the last step as the second output. The loop is over t, every batch
entry and head at once (`state_space.scan`); the 16-bit and 8-bit float types compute in f32 and
round the outputs once.

Domain: OpenVINO's source declares Mamba2 with a one-argument `OPENVINO_OP("Mamba2")` in
ov::op::internal, which writes `version="extension"` in saved IR. OpenVINO 2026.4.1 has no
Mamba2 (its CPU plugin runs SelectiveSSM instead), so the op is checked against a
transcription of its page. OpenVINO's sources hold two Mamba2 declarations: one with the
page's inputs (dA, dBx, C, recurrent_state), one taking the raw A, dt, B, x, C as SelectiveSSM
does; irscatter follows the page.

Checks: the ranks (5, 5, 4, 4), one floating-point type T for all four inputs (the page),
dA's two trailing dimensions 1 (the page gives dA as [batch, heads, seq_len, 1, 1]; other
shapes that would broadcast are refused), and batch, heads, sequence length, head dim and
state size the same wherever they appear.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.internal import state_space
from irscatter.ops.registry import register

DOMAIN = "extension"
RANKS = (5, 5, 4, 4)


@register("Mamba2", 1, domain=DOMAIN)
class Mamba2(Op):
    """Mamba2's state recurrence on the discretized dA, dBx and C."""

    labels = {
        "mamba2-rank": "an input does not have its rank: dA and dBx 5-D, C and recurrent_state 4-D",
        "mamba2-type": "the inputs are not all of one floating-point type",
        "mamba2-dims": "the inputs disagree on batch, heads, sequence length, head dim or state size, "
                       "or dA's trailing dimensions are not 1",
    }

    inputs = ("dA", "dBx", "C", "recurrent_state")
    outputs = 2

    def infer(self, *given: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        state_space.check_ranks(self, given, RANKS, "mamba2-rank")
        etype = state_space.common_float(self, given, self.inputs, "mamba2-type")
        da, dbx, c, state = (state_space.dims(info, rank) for info, rank in zip(given, RANKS))
        for axis in (3, 4):
            check(not da[axis].is_static or int(da[axis]) == 1, "mamba2-dims",
                  f"dA must be [batch, heads, seq_len, 1, 1], found {given[0].shape}", port=self.port("dA"))
        places = {"dA": da, "dBx": dbx, "C": c}
        batch = state_space.agree(self, "mamba2-dims", "the batch", *((n, d[0]) for n, d in places.items()),
                           ("recurrent_state", state[0]))
        heads = state_space.agree(self, "mamba2-dims", "the number of heads", *((n, d[1]) for n, d in places.items()),
                           ("recurrent_state", state[1]))
        length = state_space.agree(self, "mamba2-dims", "the sequence length", *((n, d[2]) for n, d in places.items()))
        head_dim = state_space.agree(self, "mamba2-dims", "the head dim", ("dBx", dbx[3]), ("recurrent_state", state[2]))
        size = state_space.agree(self, "mamba2-dims", "the state size", ("dBx", dbx[4]), ("C", c[3]),
                          ("recurrent_state", state[3]))
        return (TensorInfo(etype, PartialShape.of([batch, heads, length, head_dim])),
                TensorInfo(etype, PartialShape.of([batch, heads, head_dim, size])))

    def compute(self, da: np.ndarray, dbx: np.ndarray, c: np.ndarray,
                state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        etype = ElementType.from_dtype(dbx.dtype)
        work = compute_dtype(etype)
        da, dbx, c = (v.astype(work, copy=False) for v in (da, dbx, c))
        final = state.astype(work, copy=True)
        with np.errstate(over="ignore", invalid="ignore"):
            out, _ = state_space.scan(final, da[:, :, :, 0, 0].transpose(2, 0, 1), c.transpose(2, 0, 1, 3),
                               inflow=dbx.transpose(2, 0, 1, 3, 4))
        return from_compute(out.transpose(1, 2, 0, 3), etype), from_compute(final, etype)
