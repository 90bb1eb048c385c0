"""PagedGatedDeltaNet (domain `extension`): GatedDeltaNet over sequences packed into one batch of
tokens, each reading and writing its recurrent state through a table of state blocks.

Domain: OpenVINO declares `ov::op::internal::PagedGatedDeltaNet` with the one-argument
`OPENVINO_OP("PagedGatedDeltaNet")`, whose version is `extension`; its CPU plugin registers the
class as an extension and runs it.

Sequence s owns the token rows `subsequence_begins[s]` to `subsequence_begins[s+1]` of query,
key, value, gate and beta, and the blocks `block_indices[block_indices_begins[s] :
block_indices_begins[s+1]]` (rows of `recurrent_state_table`, each a whole state [Hv, V, K]).
What a step does for each sequence with tokens, as the page's use cases list it ("read from block
0, write to block 1...N") and OpenVINO's CPU plugin computes it:

1. Its state starts as its block 0 (the state after its `past_lens[s]` tokens, which the caller
   keeps there). All sequences read their block 0 before any sequence writes.
2. Each token updates it by the gated delta rule of GatedDeltaNet, value head by value head
   (query and key head h // (Hv / H)): the state decays by exp(gate), key @ S is read out, the
   beta-weighted difference from value is added back as an outer product with key, and the
   output is query / sqrt(K) @ S (query and key L2-normalized first when `use_qk_l2norm`).
3. With n = past_lens[s] % cache_interval[s] + (tokens done so far), the state is stored after
   each token where n is a multiple of the interval, and after the sequence's last token, into
   its block 1 + (n - 1) // cache_interval[s]: block 1 holds the state at the next multiple of
   the interval, block 2 the one after, the last written block the state after the step. With
   `cache_interval[s] <= 0` only the final state is stored, into block 1. A block number past
   the sequence's table is not stored (as in the plugin).

Where the page and this differ: the page's sketch of the update writes `gate * S` and reads
key @ S before the decay, leaves out the query's 1 / sqrt(K), and says the op replays tokens
up to `past_lens` from the most recent cached block. The page also calls the op the paged form
of GatedDeltaNet, whose page defines the decay as exp(gate), the read-out after it, and the
scaled query, and the op holds no tokens before the step to replay; irscatter follows
GatedDeltaNet's definition and the use cases, which are what OpenVINO's CPU plugin computes.

The table is updated in place as OpenVINO's plugin does: a donated `recurrent_state_table`
holds the stored blocks after the run; one not donated is left as it was (the step writes a
private copy). Refused with a labelled error: sequences that do not cover the token rows in
order, a sequence with tokens but no block, a block number outside the table, a negative past
length. A sequence without tokens reads and writes nothing and needs no block (OpenVINO's CPU
plugin refuses a step where any sequence has no block). Types: query, key, value, the table, gate and beta share one float type T (f16 and bf16
compute in f32 and round what they store and output); the five index inputs are i32 or i64.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import field_validator

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import strict
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.internal.core import dim_value, named_dims, rising_bounds, shape_from
from irscatter.ops.internal.gated_delta_net import (
    DOMAIN,
    check_groups,
    delta_step,
    normalized,
    positive_eps,
    same_float_type,
)
from irscatter.ops.registry import register

INDEX_TYPES = (ElementType.i32, ElementType.i64, ElementType.dynamic)


class PagedGatedDeltaNetAttrs(OpAttrs):
    use_qk_l2norm: IRBool = False
    q_l2_norm_eps: float = 1e-6
    k_l2_norm_eps: float = 1e-6

    _positive = field_validator("q_l2_norm_eps", "k_l2_norm_eps")(positive_eps)


@register("PagedGatedDeltaNet", 1, domain=DOMAIN)
class PagedGatedDeltaNet(Op):
    """GatedDeltaNet over packed sequences, their states in a paged table updated in place."""

    labels: ClassVar[dict[str, str]] = {
        "pgdn-rank": "query, key or value is not 3-D, the table not 4-D, gate or beta not 2-D, or an index "
                     "input not 1-D",
        "pgdn-shape": "the inputs disagree on the tokens, the heads or a head size",
        "pgdn-heads": "value's heads are not a multiple of query and key's",
        "pgdn-sequences": "subsequence_begins, block_indices_begins, past_lens and cache_interval do not describe "
                          "the same sequences covering the token rows in order, or a past length is negative",
        "pgdn-block-table": "a sequence with tokens has no block, or names a block outside the state table",
        "pgdn-unstored": "strict mode: the interval asks to store a state past the sequence's blocks",
        "pgdn-shared-block": "strict mode: sequences of one step read or write one block",
    }

    Attrs = PagedGatedDeltaNetAttrs
    attrs: PagedGatedDeltaNetAttrs
    inputs = ("query", "key", "value", "recurrent_state_table", "gate", "beta", "subsequence_begins",
              "block_indices", "block_indices_begins", "past_lens", "cache_interval")
    foldable = False
    writes_inputs = (3,)

    def infer(self, *infos: TensorInfo) -> TensorInfo:
        etype = same_float_type(self, infos[:6], self.inputs[:6])
        for name, info in zip(self.inputs[6:], infos[6:]):
            check(info.etype in INDEX_TYPES, "index-type", f"{name} must be i32 or i64, found {info.etype}",
                  port=self.port(name))
        query, key, value, table, gate, beta, begins, blocks, block_begins, past, interval = infos
        dims = named_dims(self, [("query", query, "THK"), ("key", key, "THK"), ("value", value, "TGV"),
                                 ("recurrent_state_table", table, "NGVK"), ("gate", gate, "TG"), ("beta", beta, "TG")],
                          "pgdn-rank", "pgdn-shape")
        check_groups(self, dims, "pgdn-heads")
        counts = named_dims(self, [("subsequence_begins", begins, "S"), ("block_indices", blocks, "M"),
                                   ("block_indices_begins", block_begins, "S"), ("past_lens", past, "P"),
                                   ("cache_interval", interval, "P")], "pgdn-rank", "pgdn-sequences")
        starts, sequences = dim_value(counts, "S"), dim_value(counts, "P")
        if starts is not None and sequences is not None:
            check(starts == sequences + 1, "pgdn-sequences",
                  f"{sequences} past_lens and cache_interval need {sequences + 1} subsequence_begins and "
                  f"block_indices_begins, found {starts}", port=self.port("subsequence_begins"))
        return TensorInfo(etype, shape_from(dims, "TGV"))

    def compute(self, *arrays: np.ndarray, written: frozenset[int] = frozenset()) -> np.ndarray:
        # The caller's table is written only when donated; otherwise the step works on a copy.
        return self.step(arrays, output_buffer(arrays[3], inplace=3 in written, any_layout=True))

    def step(self, arrays: tuple[np.ndarray, ...], table: np.ndarray) -> np.ndarray:
        """Run the step, storing states into `table` in place; returns the output."""
        query, key, value, _, gate, beta = arrays[:6]
        etype = ElementType.from_dtype(query.dtype)
        work = compute_dtype(etype)
        sequences = self._sequences(arrays, query.shape[0], table.shape[0])
        if strict.active():
            self._report_blocks(sequences)
        heads, head_size = query.shape[1], query.shape[2]
        value_heads = value.shape[1]
        shared = np.arange(value_heads) // (value_heads // heads if heads else 1)
        starts = {s: table[blocks[0]].astype(work) for s, (first, end, blocks, _, _) in enumerate(sequences)
                  if end > first}
        out = np.zeros(value.shape, work)
        with np.errstate(all="ignore"):
            q = normalized(query.astype(work), self.attrs.use_qk_l2norm, self.attrs.q_l2_norm_eps)[:, shared]
            q = q * work.type(1 / np.sqrt(head_size) if head_size else np.inf)
            k = normalized(key.astype(work), self.attrs.use_qk_l2norm, self.attrs.k_l2_norm_eps)[:, shared]
            v, g, b = value.astype(work), np.exp(gate.astype(work)), beta.astype(work)
            for s, (first, end, blocks, done, interval) in enumerate(sequences):
                if first == end:
                    continue
                state = np.swapaxes(starts[s], 1, 2)  # [Hv, K, V], a view the steps update in place
                for t in range(first, end):  # the recurrence, every head at once
                    out[t] = delta_step(state, q[t], k[t], v[t], g[t], b[t])
                    count = done + t - first + 1
                    if (interval > 0 and count % interval == 0) or t == end - 1:
                        slot = 1 + (count - 1) // interval if interval > 0 else 1
                        if slot < blocks.size:
                            table[blocks[slot]] = from_compute(np.swapaxes(state, 1, 2), etype)
        return from_compute(out, etype)

    def _report_blocks(self, sequences: list[tuple[int, int, np.ndarray, int, int]]) -> None:
        """Strict mode: the states the interval asks to store past a sequence's blocks (which the
        page does not place; irscatter, as the plugin, drops them), and blocks one sequence writes
        that another reads or writes (the plugin runs sequences in parallel: their order is open)."""
        port = self.port("block_indices")
        owners: dict[int, list[int]] = {}
        for s, (first, end, blocks, done, interval) in enumerate(sequences):
            if end == first:
                continue
            needed = 2 + (done + end - first - 1) // interval if interval > 0 else 2
            if needed > blocks.size:
                strict.report("pgdn-unstored", f"sequence {s} stores states into its blocks 1 to {needed - 1}, but "
                              f"has {blocks.size}; the page places none past its blocks, and irscatter, as "
                              f"OpenVINO's CPU plugin, does not store them", port=port)
            for block in {int(b) for b in blocks[:needed]}:
                owners.setdefault(block, []).append(s)
        shared = {block: users for block, users in owners.items() if len(users) > 1}
        if shared:
            block, users = min(shared.items())
            strict.report("pgdn-shared-block", f"sequences {users} all read or write block {block} "
                          f"({len(shared)} blocks shared in all); irscatter reads every start state first and "
                          f"writes in sequence order, where OpenVINO's plugin runs the sequences at once", port=port)

    def _sequences(self, arrays: tuple[np.ndarray, ...], tokens: int,
                   blocks: int) -> list[tuple[int, int, np.ndarray, int, int]]:
        """Per sequence: its first and end token rows, its blocks, and the tokens before the step
        counted modulo the interval, and the interval."""
        begins_in, table_in, block_begins_in, past_in, interval_in = arrays[6:]
        count = past_in.size
        if begins_in.size != count + 1 or block_begins_in.size != count + 1 or interval_in.size != count:
            raise ExecutionError(f"{count} past_lens need {count} cache_interval and {count + 1} subsequence_begins "
                                 f"and block_indices_begins, found {interval_in.size}, {begins_in.size} and "
                                 f"{block_begins_in.size}", label="pgdn-sequences", port=self.port("past_lens"))
        begins = rising_bounds(self, begins_in, "subsequence_begins", 0, tokens, "pgdn-sequences",
                               first=0, last=tokens)
        block_begins = rising_bounds(self, block_begins_in, "block_indices_begins", 0, table_in.size,
                                     "pgdn-sequences")
        past, interval = past_in.astype(np.int64), interval_in.astype(np.int64)
        if (past < 0).any():
            raise ExecutionError(f"past_lens must not be negative, found {past.tolist()}", label="pgdn-sequences",
                                 port=self.port("past_lens"))
        table = table_in.astype(np.int64)
        found = []
        for s in range(count):
            own = table[block_begins[s]:block_begins[s + 1]]
            first, end = int(begins[s]), int(begins[s + 1])
            problem = None
            if end > first and own.size == 0:
                problem = f"sequence {s} has {end - first} tokens and no block to read its state from"
            elif end > first and ((own < 0) | (own >= blocks)).any():
                problem = f"sequence {s}'s blocks {own.tolist()} name a block outside the table's {blocks}"
            if problem:
                raise ExecutionError(problem, label="pgdn-block-table", port=self.port("block_indices"))
            done = int(past[s] % interval[s]) if interval[s] > 0 else 0
            found.append((first, end, own, done, int(interval[s])))
        return found
