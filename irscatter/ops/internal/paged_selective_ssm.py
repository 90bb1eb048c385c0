"""PagedSelectiveSSM (domain `extension`): SelectiveSSM over the tokens of several sequences
packed into one batch, each resuming from, and caching into, rows of a paged state table.

Domain: OpenVINO declares it with a one-argument `OPENVINO_OP("PagedSelectiveSSM")` in
ov::op::internal (version "extension" in saved IR). OpenVINO's `paged_attention_transformation`
turns a stateful SelectiveSSM into it (PagedSelectiveSSMFusion), and the CPU plugin runs it.

Sequence s owns token rows `subsequence_begins[s]` to `subsequence_begins[s+1]` of dt, B, x and
C. Its state ([heads, head_dim, state_size]) starts as row `la_block_indices[
la_block_indices_begins[s]]` of `recurrent_state_table` (its slot 0), runs SelectiveSSM's
recurrence over its tokens (head h reading group h // (heads / groups) of B and C), and is
written to its slots 1, 2, ... as `state_space` describes: each time the processed count reaches a
multiple of `cache_interval[s]`, and after its last token unless that one just was. With
`cache_interval[s] <= 0` nothing is written (the page: no caching for that sequence; the CPU
plugin leaves the table alone too). The sequences run side by side, step by step.

The table is updated in place, as OpenVINO's plugin does: a donated table
(`model.run(feeds, donate=[...])`) holds the step's snapshots afterwards; a fed table not
donated is left as it was and the step works on a copy. `paged_selective_ssm(...)` returns
the updated table beside the output.

Types (the page): A, dt, B, x, C one floating-point type T (the output's); the table f32, f16
or bf16 whatever T is; the five metadata inputs i32. OpenVINO also takes i64 metadata; the page
does not, and irscatter refuses it. Arithmetic is in f32 (f64 for f64), the table's rows read
and written in its own type, the state staying in f32 between tokens. OpenVINO refuses a state
size of 0, which the page allows (the output is then zeros).

Refused with a label: metadata of inconsistent lengths, subsequence_begins not rising from 0
to the token count, la_block_indices_begins not rising within la_block_indices, a negative
num_processed_tokens (`paged-ssm-sequences`); a sequence with fewer slots than it reads and
writes, or using a row outside the table (`paged-ssm-slots`; OpenVINO's plugin refuses the first
too and does not check the second).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.internal import state_space
from irscatter.ops.registry import register

DOMAIN = "extension"
INPUTS = ("A", "dt", "B", "x", "C", "recurrent_state_table", *state_space.METADATA)
RANKS = (1, 2, 3, 3, 3, 4, 1, 1, 1, 1, 1)
CACHE_TYPES = (ElementType.f32, ElementType.f16, ElementType.bf16)


@register("PagedSelectiveSSM", 1, domain=DOMAIN)
class PagedSelectiveSSM(state_space.PagedOp):
    """SelectiveSSM over packed sequences with a paged state table."""

    labels = {
        "paged-ssm-rank": "an input does not have its rank: A and the metadata 1-D, dt 2-D, B, x and C 3-D, "
                          "recurrent_state_table 4-D",
        "paged-ssm-type": "A, dt, B, x and C are not of one floating-point type, the table is not f32, f16 or "
                          "bf16, or a metadata input is not i32",
        "paged-ssm-dims": "the inputs disagree on tokens, heads, head dim, groups or state size",
        "paged-ssm-groups": "the heads are not a multiple of the (non-zero) groups of B and C",
        "paged-ssm-sequences": "the metadata do not describe the step's sequences and their tokens",
        "paged-ssm-slots": "a sequence has fewer slots than it reads and writes, or uses a row outside the table",
    }

    inputs = INPUTS
    writes_inputs = (5,)
    table = 5
    ranks, floats = RANKS, INPUTS[:5]
    labels_of = {"rank": "paged-ssm-rank", "type": "paged-ssm-type", "sequences": "paged-ssm-sequences",
                 "slots": "paged-ssm-slots"}
    final_when_uncached = False

    def infer(self, *given: TensorInfo) -> TensorInfo:
        etype = self.check_signature(given)
        table = given[5]
        check(table.etype in (*CACHE_TYPES, ElementType.dynamic), "paged-ssm-type",
              f"recurrent_state_table must be f32, f16 or bf16, found {table.etype}",
              port=self.port("recurrent_state_table"))
        a, dt, b, x, c, state = (state_space.dims(info, rank) for info, rank in zip(given[:6], RANKS))
        tokens = state_space.agree(self, "paged-ssm-dims", "the tokens", ("x", x[0]), ("dt", dt[0]), ("B", b[0]),
                            ("C", c[0]))
        heads = state_space.agree(self, "paged-ssm-dims", "the number of heads", ("x", x[1]), ("A", a[0]), ("dt", dt[1]),
                           ("recurrent_state_table", state[1]))
        head_dim = state_space.agree(self, "paged-ssm-dims", "the head dim", ("x", x[2]), ("recurrent_state_table", state[2]))
        groups = state_space.agree(self, "paged-ssm-dims", "the number of groups", ("B", b[1]), ("C", c[1]))
        state_space.agree(self, "paged-ssm-dims", "the state size", ("B", b[2]), ("C", c[2]),
                   ("recurrent_state_table", state[3]))
        state_space.check_groups(self, heads, groups, "paged-ssm-groups")
        return TensorInfo(etype, PartialShape.of([tokens, heads, head_dim]))

    def step(self, arrays: tuple[np.ndarray, ...], table: np.ndarray) -> np.ndarray:
        named = dict(zip(INPUTS, arrays))
        x = named["x"]
        etype = ElementType.from_dtype(x.dtype)
        work = compute_dtype(etype)
        plan = self.plan(named, x.shape[0], table.shape[0])
        out = np.zeros(x.shape, work)
        if plan.lanes.size:
            steps = int(plan.length[0])
            # [steps, lanes]: each lane's token row at each step (its last one where it has stopped)
            rows = plan.first[None, :] + np.minimum(np.arange(steps)[:, None], plan.length[None, :] - 1)
            a, dt, b, x_, c = (named[name].astype(work, copy=False) for name in INPUTS[:5])
            state = table[plan.read].astype(work)
            y, kept = state_space.selective(state, a, dt[rows], b[rows], x_[rows], c[rows], running=plan.running(),
                                     keep=plan.keep())
            valid = np.arange(steps)[:, None] < plan.length[None, :]
            out[rows[valid]] = y[valid]
            if kept:
                state_space.store(table, plan.write_row, np.concatenate(kept))
        return from_compute(out, etype)


def paged_selective_ssm(*arrays) -> tuple[np.ndarray, np.ndarray]:
    """The op on numpy arrays (its 11 inputs in order). Returns (output, recurrent_state_table
    as it is after the step, a new array); the inputs are left untouched."""
    return PagedSelectiveSSM.on_arrays(arrays)
