"""PagedQSAIndexer (domain `extension`): QSAIndexer's block selection for a step of continuous
batching, its key-side state kept in paged caches it updates in place.

Domain: as QSAIndexer's (see qsa_indexer.py). OpenVINO defines no PagedQSAIndexer; its paged
internal ops declare `OPENVINO_OP("Type")`, whose default domain is `extension`.

The conventions of PagedAttentionExtension: sequence s owns the token rows
`subsequence_begins[s]` to `subsequence_begins[s+1]`, has `past_lens[s]` positions already, and
its pages are `block_indices[block_indices_begins[s] : block_indices_begins[s+1]]`, in order.
Block b of a sequence (positions b*r .. b*r + r - 1) keeps its summary in page
`table[b*r // page_size]`, row `(b*r % page_size) // r` of `summary_cache`. The sequence's ring
slot `slot_mapping[s]` holds its recent raw keys at `pos % ring_capacity`, and the rotary phase
of block b's first token at row `b % (ring_capacity / r)` of `indexer_k_start_cos_sin`.

A step, as the page's pseudo-code runs it token by token: sequences in order, each token's key
written to the ring (and its phase, when it opens a block), and each block it completes
summarized from the ring (block_selection.py's arithmetic) into its page. Then every token of the step
selects among the complete blocks at or before it, read through its sequence's pages, as
QSAIndexer does: sel_indices [tokens, h_sel, block_topk + 1] and sel_count [tokens, h_sel].

The kernel does each sequence's writes at once, with the same result: a block completed in the
step reads its keys and phase from the step's own rows where they came in this step, and from
the caches as earlier sequences left them otherwise (a ring row is rewritten only ring_capacity
positions later, after the block that needs it is done); where several writes of the step land
on one place (a ring row the step's tokens wrap around, a page listed twice), the last wins.

The caches. As PagedAttentionExtension's, `summary_cache`, `indexer_k_cache` and
`indexer_k_start_cos_sin` (inputs 3 to 5) are updated in the caller's arrays when donated
(`model.run(feeds, donate=[...])`); caches fed and not donated are left as they were.

Refused with a label rather than guessed: sequences that do not partition the tokens or the
block table (`pqsa-sequences`), a ring slot outside the cache (`pqsa-slot`), and a table that
does not cover a sequence's complete blocks or names a page outside `summary_cache`
(`pqsa-block-table`). T, the index type and the attributes as QSAIndexer's; slot_mapping,
block_indices, block_indices_begins, subsequence_begins and past_lens are i32 or i64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import TensorInfo, check
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.internal.block_selection import agreed, block_keys
from irscatter.ops.internal.qsa_indexer import DOMAIN, QSAAttrs, QSAChecks
from irscatter.ops.registry import register

INPUTS = ("q_idx", "k_idx", "k_rope_cos_sin", "summary_cache", "indexer_k_cache", "indexer_k_start_cos_sin",
          "k_norm_weight", "slot_mapping", "block_indices", "block_indices_begins", "subsequence_begins", "past_lens")
INDEX_INPUTS = INPUTS[7:]
INDEX_TYPES = (ElementType.i32, ElementType.i64)


class PagedQSAAttrs(QSAAttrs):
    page_size: int
    ring_capacity: int


@dataclass(frozen=True)
class Sequence:
    """One sequence of the step: its token rows, its past, its ring slot and its page table."""

    first: int
    new: int
    past: int
    slot: int
    table: np.ndarray


@register("PagedQSAIndexer", 1, domain=DOMAIN)
class PagedQSAIndexer(QSAChecks):
    """QSA's block selection over paged caches, updating them in place."""

    labels = {
        "pqsa-sequences": "slot_mapping, past_lens, subsequence_begins and block_indices_begins do not describe the "
                          "same sequences, or do not split the tokens and block_indices from first to last in order",
        "pqsa-slot": "slot_mapping names a ring slot outside indexer_k_cache",
        "pqsa-block-table": "a sequence's pages do not cover its complete blocks, or name a page outside "
                            "summary_cache",
    }

    Attrs = PagedQSAAttrs
    attrs: PagedQSAAttrs
    inputs = INPUTS
    outputs = 2
    foldable = False
    writes_inputs = (3, 4, 5)
    float_inputs = INPUTS[:7]
    ranks = {"q_idx": 2, "k_idx": 2, "k_rope_cos_sin": 2, "summary_cache": 4, "indexer_k_cache": 4,
             "indexer_k_start_cos_sin": 3, "k_norm_weight": 1, **{name: 1 for name in INDEX_INPUTS}}

    def infer(self, *given_infos: TensorInfo) -> tuple[TensorInfo, ...]:
        a = self.attrs
        r = a.compress_ratio
        self.check_attributes()
        for name, size, least in (("page_size", a.page_size, 1), ("ring_capacity", a.ring_capacity, r)):
            check(size >= least and size % r == 0, "qsa-attribute",
                  f"{name} must be a multiple of compress_ratio ({r}) and at least {least}, found {size}",
                  port=self.port(name))
        given = dict(zip(INPUTS, given_infos))
        self.check_inputs(given)
        for name in INDEX_INPUTS:
            found = given[name].etype
            check(found in (*INDEX_TYPES, ElementType.dynamic), "qsa-type", f"{name} must be i32 or i64, found {found}",
                  port=self.port(name))
        shapes = {name: info.shape for name, info in given.items()}
        tokens = Dimension.dynamic()
        if all(s.rank_is_static for s in shapes.values()):
            tokens = self._check_shapes(shapes)
        width = a.block_topk + 1
        return (TensorInfo(ElementType.i32, PartialShape.of([tokens, a.h_sel, width])),
                TensorInfo(ElementType.i32, PartialShape.of([tokens, a.h_sel])))

    def _check_shapes(self, shapes: dict[str, PartialShape]) -> Dimension:
        a = self.attrs
        size, r = a.indexer_head_dim, a.compress_ratio
        q, k, cs, summary, ring, phases, weight = (shapes[n] for n in INPUTS[:7])
        tokens = self.same("the token rows of q_idx, k_idx and k_rope_cos_sin", "k_idx", q[0], k[0], cs[0])
        heads = []
        for name, features in (("q_idx", q[1]), ("k_idx", k[1])):
            check(not features.is_static or int(features) % size == 0, "qsa-shape",
                  f"{name}'s features ({features}) must be heads * indexer_head_dim ({size})", port=self.port(name))
            heads.append(Dimension.static(int(features) // size) if features.is_static else Dimension.dynamic())
        k_heads = self.same("the index-key heads of k_idx, summary_cache and indexer_k_cache", "summary_cache",
                            heads[1], summary[1], ring[1])
        self.check_heads(heads[0], k_heads, "k_idx")
        for name, dim in (("summary_cache", summary[3]), ("indexer_k_cache", ring[3]), ("k_norm_weight", weight[0])):
            self.equals(dim, size, f"{name}'s head size (indexer_head_dim)", name)
        for name, dim in (("k_rope_cos_sin", cs[1]), ("indexer_k_start_cos_sin", phases[2])):
            self.equals(dim, 2 * a.indexer_rotary_dim, f"{name}'s last dimension (2 * indexer_rotary_dim)", name)
        self.equals(summary[2], a.page_size // r, "summary_cache's rows per page (page_size / compress_ratio)",
                    "summary_cache")
        self.equals(ring[2], a.ring_capacity, "indexer_k_cache's ring length (ring_capacity)", "indexer_k_cache")
        self.equals(phases[1], a.ring_capacity // r, "indexer_k_start_cos_sin's phases (ring_capacity / "
                    "compress_ratio)", "indexer_k_start_cos_sin")
        self.same("the ring slots of indexer_k_cache and indexer_k_start_cos_sin", "indexer_k_start_cos_sin",
                  ring[0], phases[0])
        bounds = [shapes[n][0] for n in ("block_indices_begins", "subsequence_begins")]
        check(all(not d.is_static or int(d) >= 1 for d in bounds), "pqsa-sequences",
              "block_indices_begins and subsequence_begins need one more entry than there are sequences",
              port=self.port("subsequence_begins"))
        counts = [shapes["slot_mapping"][0], shapes["past_lens"][0],
                  *(Dimension.static(int(d) - 1) if d.is_static else d for d in bounds)]
        check(agreed(counts) is not None, "pqsa-sequences", "slot_mapping and past_lens must have one entry per "
              "sequence, block_indices_begins and subsequence_begins one more: found "
              f"{', '.join(str(shapes[n][0]) for n in INDEX_INPUTS if n != 'block_indices')}",
              port=self.port("past_lens"))
        return tokens

    def compute(self, *arrays: np.ndarray, written: frozenset[int] = frozenset()) -> tuple[np.ndarray, ...]:
        # The caller's caches are updated only when donated; otherwise the step works on copies.
        caches = [output_buffer(arrays[i], inplace=i in written, any_layout=True) for i in (3, 4, 5)]
        return self.step(arrays, *caches)

    def step(self, arrays: tuple[np.ndarray, ...], summary: np.ndarray, ring: np.ndarray,
             phases: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Run one step, updating the three caches in place."""
        self.infer_once(arrays)
        named = dict(zip(INPUTS, arrays))
        a = self.attrs
        size = a.indexer_head_dim
        tokens = named["q_idx"].shape[0]
        keys = named["k_idx"].reshape(tokens, named["k_idx"].shape[1] // size, size)
        sequences = self._sequences(named, tokens, summary.shape[0], ring.shape[0])
        for sequence in sequences:
            if sequence.new:
                self._write(sequence, keys, named, summary, ring, phases)
        queries = named["q_idx"].reshape(tokens, named["q_idx"].shape[1] // size, size).astype(np.float32)
        indices = np.full((tokens, a.h_sel, a.block_topk + 1), -1, np.int32)
        counts = np.zeros((tokens, a.h_sel), np.int32)
        for sequence in sequences:
            if not sequence.new:
                continue
            rows = slice(sequence.first, sequence.first + sequence.new)
            blocks = np.arange((sequence.past + sequence.new) // a.compress_ratio)
            pages, places = self._places(sequence, blocks)
            stored = summary[pages, :, places].transpose(1, 0, 2)[None].astype(np.float32)  # [1, Hik, B, D]
            positions = sequence.past + np.arange(sequence.new)[None]
            chosen, count = self.select(queries[None, rows], stored, positions)
            indices[rows], counts[rows] = chosen[0].transpose(1, 0, 2), count[0].T
        return indices, counts

    def _places(self, sequence: Sequence, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The page and the row of `summary_cache` of each block of a sequence."""
        starts = blocks * self.attrs.compress_ratio
        return sequence.table[starts // self.attrs.page_size], starts % self.attrs.page_size // self.attrs.compress_ratio

    def _write(self, sequence: Sequence, keys: np.ndarray, named: dict[str, np.ndarray], summary: np.ndarray,
               ring: np.ndarray, phases: np.ndarray) -> None:
        """One sequence's keys and phases into its ring slot, and the blocks it completes into its pages."""
        a = self.attrs
        r, capacity = a.compress_ratio, a.ring_capacity
        past, new, first = sequence.past, sequence.new, sequence.first
        slot_keys, slot_phases = ring[sequence.slot], phases[sequence.slot]  # views: [Hik, C, D], [C / r, 2 * rot]
        step_keys, step_phases = keys[first:first + new], named["k_rope_cos_sin"][first:first + new]
        done = np.arange(past // r, (past + new) // r)  # the blocks this step completes
        positions = done[:, None] * r + np.arange(r)  # [blocks, r]
        from_step = positions >= past
        raw = np.where(from_step[None, ..., None], step_keys[np.clip(positions - past, 0, new - 1)].transpose(2, 0, 1, 3),
                       slot_keys[:, positions % capacity])  # [Hik, blocks, r, D]
        starts = done * r
        phase = np.where((starts >= past)[:, None], step_phases[np.clip(starts - past, 0, new - 1)],
                         slot_phases[done % (capacity // r)])
        etype = ElementType.from_dtype(keys.dtype)
        made = block_keys(raw, named["k_norm_weight"], phase[None], a.indexer_rotary_dim, a.eps, etype)
        # the writes, each place once with its last value
        offsets = (past + np.arange(new)) % capacity
        last = _last_of_each(offsets)
        slot_keys[:, offsets[last]] = step_keys[last].transpose(1, 0, 2)
        opening = np.flatnonzero((past + np.arange(new)) % r == 0)
        rows = (past + opening) // r % (capacity // r)
        last = _last_of_each(rows)
        slot_phases[rows[last]] = step_phases[opening[last]]
        pages, places = self._places(sequence, done)
        last = _last_of_each(pages * summary.shape[2] + places)
        summary[pages[last], :, places[last]] = made[:, last].transpose(1, 0, 2)

    def _sequences(self, named: dict[str, np.ndarray], tokens: int, pages: int, slots: int) -> list[Sequence]:
        past = named["past_lens"].astype(np.int64)
        begins = named["subsequence_begins"].astype(np.int64)
        page_begins = named["block_indices_begins"].astype(np.int64)
        table = named["block_indices"].astype(np.int64)
        slot_of = named["slot_mapping"].astype(np.int64)
        problem = None
        if (past < 0).any():
            problem = f"past_lens must not be negative, found {past.tolist()}"
        elif begins[0] != 0 or begins[-1] != tokens or (np.diff(begins) < 0).any():
            problem = f"subsequence_begins {begins.tolist()} must rise from 0 to the {tokens} token rows"
        elif page_begins[0] != 0 or page_begins[-1] != table.size or (np.diff(page_begins) < 0).any():
            problem = f"block_indices_begins {page_begins.tolist()} must rise from 0 to the {table.size} block_indices"
        if problem:
            raise ExecutionError(problem, label="pqsa-sequences", port=self.port("past_lens"))
        outside = (slot_of < 0) | (slot_of >= slots)
        if outside.any():
            raise ExecutionError(f"slot_mapping {slot_of.tolist()} names ring slots outside the {slots} of "
                                 "indexer_k_cache", label="pqsa-slot", port=self.port("slot_mapping"))
        sequences = []
        for s in range(past.size):
            sequence = Sequence(int(begins[s]), int(begins[s + 1] - begins[s]), int(past[s]), int(slot_of[s]),
                                table[page_begins[s]:page_begins[s + 1]])
            self._check_table(s, sequence, pages)
            sequences.append(sequence)
        return sequences

    def _check_table(self, s: int, sequence: Sequence, pages: int) -> None:
        r, page_size = self.attrs.compress_ratio, self.attrs.page_size
        blocks = (sequence.past + sequence.new) // r if sequence.new else 0
        needed = (blocks - 1) * r // page_size + 1 if blocks else 0
        listed = sequence.table[:needed]
        problem = None
        if listed.size < needed:
            problem = (f"sequence {s} has {blocks} complete blocks of {r} tokens, on {needed} pages of {page_size}, "
                       f"but its block table lists {listed.size}")
        elif ((listed < 0) | (listed >= pages)).any():
            problem = f"sequence {s}'s pages {listed.tolist()} name a page outside the {pages} of summary_cache"
        if problem:
            raise ExecutionError(problem, label="pqsa-block-table", port=self.port("block_indices"))


def _last_of_each(places: np.ndarray) -> np.ndarray:
    """The positions of `places` that hold each value's last occurrence (a write order where
    the last write to a place wins)."""
    _, from_end = np.unique(places[::-1], return_index=True)
    return np.sort(places.size - 1 - from_end)
