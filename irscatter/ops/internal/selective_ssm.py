"""SelectiveSSM (domain `extension`): the selective state-space recurrence of Mamba2 mixers
(NemotronH, Granite 4 hybrids), discretized inside the op.

Domain: OpenVINO declares the op with a one-argument `OPENVINO_OP("SelectiveSSM")` in
ov::op::internal, and a one-argument OPENVINO_OP gives the type the version "extension"; the
saved IR tags it `version="extension"` and OpenVINO reads it back (with the CPU plugin's
extensions, which register the op).

For each batch entry b, head h (reading group g = h // (heads / groups) of B and C) and step t:

    dA = exp(A[h] * dt[b, t, h])
    state[b, h] = state[b, h] * dA + outer(x[b, t, h], dt[b, t, h] * B[b, t, g])
    output[b, t, h] = state[b, h] @ C[b, t, g]

starting from `recurrent_state` and returning the state after the last step as the second
output. The discretization (dA, dt * B) is computed for the whole sequence at once; the
recurrence runs step by step over all batch entries and heads together (`state_space.scan`). The
16-bit and 8-bit float types compute in f32, the state staying in f32 from step to step (as
OpenVINO's CPU plugin keeps it), and round the outputs once.

The page types every input T. OpenVINO's core takes f32, f16 and bf16 for each input on its
own (the output takes x's type, the state output the state's); irscatter follows the page: one
floating-point type for all six, any of them (f64 and the f8 types too). The shapes are
checked as OpenVINO's shape inference checks them: the batch of every input, the sequence
length of dt, B, x and C, the heads of A, dt, x and the state, the head dim of x and the state,
the groups of B and C, the state size of B, C and the state, and heads a multiple of the
(non-zero) groups.

Where OpenVINO 2026.4.1 departs from the page, irscatter follows the page: OpenVINO refuses a
state size of 0 (the outputs are then zeros and an empty state), and its CPU plugin, given no
steps, returns a state output it never wrote where the page returns the state it was given.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.internal import state_space
from irscatter.ops.registry import register

DOMAIN = "extension"


@register("SelectiveSSM", 1, domain=DOMAIN)
class SelectiveSSM(Op):
    """Mamba2's selective scan from the raw parameters A, dt, B, x, C and the state."""

    labels = {
        "ssm-rank": "an input does not have its rank: A 1-D, dt 3-D, B, x, C and recurrent_state 4-D",
        "ssm-type": "the inputs are not all of one floating-point type",
        "ssm-dims": "the inputs disagree on batch, sequence length, heads, head dim, groups or state size",
        "ssm-groups": "the heads are not a multiple of the (non-zero) groups of B and C",
    }

    inputs = ("A", "dt", "B", "x", "C", "recurrent_state")
    outputs = 2

    def infer(self, *given: TensorInfo) -> tuple[TensorInfo, TensorInfo]:
        state_space.check_ranks(self, given, (1, 3, 4, 4, 4, 4), "ssm-rank")
        etype = state_space.common_float(self, given, self.inputs, "ssm-type")
        a, dt, b, x, c, state = (state_space.dims(info, rank) for info, rank in zip(given, (1, 3, 4, 4, 4, 4)))
        batch = state_space.agree(self, "ssm-dims", "the batch", ("x", x[0]), ("dt", dt[0]), ("B", b[0]), ("C", c[0]),
                           ("recurrent_state", state[0]))
        length = state_space.agree(self, "ssm-dims", "the sequence length", ("x", x[1]), ("dt", dt[1]), ("B", b[1]),
                            ("C", c[1]))
        heads = state_space.agree(self, "ssm-dims", "the number of heads", ("x", x[2]), ("A", a[0]), ("dt", dt[2]),
                           ("recurrent_state", state[1]))
        head_dim = state_space.agree(self, "ssm-dims", "the head dim", ("x", x[3]), ("recurrent_state", state[2]))
        groups = state_space.agree(self, "ssm-dims", "the number of groups", ("B", b[2]), ("C", c[2]))
        size = state_space.agree(self, "ssm-dims", "the state size", ("B", b[3]), ("C", c[3]),
                          ("recurrent_state", state[3]))
        state_space.check_groups(self, heads, groups, "ssm-groups")
        return (TensorInfo(etype, PartialShape.of([batch, length, heads, head_dim])),
                TensorInfo(etype, PartialShape.of([batch, heads, head_dim, size])))

    def compute(self, a: np.ndarray, dt: np.ndarray, b: np.ndarray, x: np.ndarray, c: np.ndarray,
                state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        etype = ElementType.from_dtype(x.dtype)
        work = compute_dtype(etype)
        a, dt, b, x, c = (v.astype(work, copy=False) for v in (a, dt, b, x, c))
        out, final = selective_scan(a, dt, b, x, c, state.astype(work, copy=True))
        return from_compute(out, etype), from_compute(final, etype)


def selective_scan(a: np.ndarray, dt: np.ndarray, b: np.ndarray, x: np.ndarray, c: np.ndarray,
                   state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scan on arrays of the work dtype laid out as the page has them, batch first; `state`
    is updated in place and returned. Returns ([batch, length, heads, head_dim], state)."""
    out, _ = state_space.selective(state, a, *(v.swapaxes(0, 1) for v in (dt, b, x, c)))
    return out.swapaxes(0, 1), state
