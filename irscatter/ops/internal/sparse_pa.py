"""SparsePA (domain `extension`, as SparseSDPA, whose module says why): the paged twin of
SparseSDPA. One call is one step of several sequences: it writes the step's keys and values
into a paged cache, then each new token attends over the key blocks its plan selects.

The paging is PagedAttentionExtension's: sequence s owns the token rows subsequence_begins[s]
.. subsequence_begins[s+1] (its `chunk` new tokens), has past_lens[s] tokens cached, and its
cache blocks are block_indices[block_indices_begins[s] : block_indices_begins[s+1]]: logical
position p is slot p % block_size of the table's block p // block_size. New token i of the
sequence is at p = past_lens[s] + i; its key and value rows ([num_kv_heads * size]) are
written there first (the same store as PagedAttentionExtension's, `write_rows`).

The plan. Query blocks are q_block_size consecutive new tokens of one sequence; the plan row
of token i is qb_start[s] + i // q_block_size, and qb_start[s+1] - qb_start[s] must be
ceil(chunk / q_block_size). A row selects logical key blocks of sel_block_size tokens, either
as `sel_indices` [rows, h_sel, K] with `sel_count` [rows, h_sel] (SparseSDPA's contract,
checked the same way) or as the boolean `sel_block_mask` [rows, h_sel, max_k_blocks], whose
entries past a sequence's own block count are padding. Token i of query head h attends the
selected positions k < past_lens[s] + chunk (never a slot not yet written), and, with
`causal`, k <= p. The logits are q . k times the `scale` attribute; the softmax and the rest
are ops/common/sparse_attention.py's.

The inputs. The page numbers thirteen (..., sel_indices, sel_count, sel_block_mask, qb_start)
but wants exactly one plan; its examples give twelve (sel_block_mask left out, qb_start as
input 11) or eleven (sel_block_mask as input 9 and qb_start as 10). Those two layouts are
taken; all thirteen are refused (`sparse-pa-plans`). Every block_indices entry must name a
block of the cache and each sequence's table must cover its positions (`sparse-pa-block-table`);
the split pointers must run from 0 to the rows they split (`sparse-pa-sequences`).

The caches, as PagedAttentionExtension's: the ones the caller donates are updated in place;
fed caches that are not donated are left as they were and the step works on copies.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import TensorInfo, check
from irscatter.ops.common import sparse_attention as sparse
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.internal.paged_attention_extension import write_rows
from irscatter.ops.internal.sparse_sdpa import DOMAIN, SelectedBlocks, SelectionAttrs
from irscatter.ops.registry import register

INPUTS = ("query", "key", "value", "key_cache", "value_cache", "block_indices", "block_indices_begins",
          "subsequence_begins", "past_lens", "sel_indices", "sel_count", "sel_block_mask", "qb_start")
INDEX_PLAN = (*INPUTS[:11], "qb_start")
MASK_PLAN = (*INPUTS[:9], "sel_block_mask", "qb_start")
_INDEXES = ("block_indices", "block_indices_begins", "subsequence_begins", "past_lens", "sel_indices", "sel_count",
            "qb_start")


class SparsePAAttrs(SelectionAttrs):
    block_size: int
    scale: float


@register("SparsePA", 1, domain=DOMAIN)
class SparsePA(SelectedBlocks):
    """Selected-block attention over a paged KV cache, writing the step's keys and values into it."""

    labels = {
        "sparse-pa-plans": "the layer gives both plans (all thirteen inputs); exactly one is taken",
        "sparse-pa-sequences": "past_lens, subsequence_begins, block_indices_begins and qb_start do not describe "
                               "the same sequences, or do not split the rows they split from 0 to the end",
        "sparse-pa-block-table": "a block_indices entry names no block of the cache, or a sequence's blocks do not "
                                 "cover its positions",
    }

    Attrs = SparsePAAttrs
    attrs: SparsePAAttrs
    inputs = INPUTS
    optional_inputs = 2
    writes_inputs = (3, 4)

    def _check_attrs(self) -> None:
        super()._check_attrs()
        a = self.attrs
        check(a.block_size > 0 and a.block_size % a.sel_block_size == 0, "sparse-attrs",
              f"block_size ({a.block_size}) must be a positive multiple of sel_block_size ({a.sel_block_size})",
              port=self.port("block_size"))

    def infer(self, *given: TensorInfo) -> TensorInfo:
        check(len(given) != len(INPUTS), "sparse-pa-plans", "the layer gives both sel_indices/sel_count and "
              "sel_block_mask; the page takes exactly one plan", port=self.port("sel_block_mask"))
        layout = INDEX_PLAN if len(given) == len(INDEX_PLAN) else MASK_PLAN
        infos = dict(zip(layout, given))
        where = partial(self._where, layout=layout)
        self._check_attrs()
        a = self.attrs
        etype = sparse.float_inputs(self, infos["query"], {n: infos[n] for n in INPUTS[1:5]}, where)
        self._check_index_types(infos, layout, _INDEXES)
        if "sel_block_mask" in infos:
            mask = infos["sel_block_mask"]
            check(mask.etype in (ElementType.boolean, ElementType.dynamic), "sparse-mask-type",
                  f"sel_block_mask must be boolean, found {mask.etype}", port=where("sel_block_mask"))
        tokens = sparse.known(*(sparse.dim(infos[n], 0) for n in INPUTS[:3]))
        blocks = sparse.known(sparse.dim(infos["key_cache"], 0), sparse.dim(infos["value_cache"], 0))
        plan = [n for n in ("sel_indices", "sel_count", "sel_block_mask") if n in infos]
        rows = tokens if a.q_block_size == 1 else sparse.known(*(sparse.dim(infos[n], 0) for n in plan))
        splits = sparse.known(*(sparse.dim(infos[n], 0) for n in ("block_indices_begins", "subsequence_begins",
                                                                   "qb_start")))
        sequences = Dimension.static(int(splits) - 1) if splits.is_static and int(splits) > 0 else None
        kv, k_size, v_size = a.num_kv_heads, a.k_head_size, a.v_head_size
        expected: dict[str, list[sparse.Expected]] = {
            "query": [tokens, a.num_heads * k_size], "key": [tokens, kv * k_size], "value": [tokens, kv * v_size],
            "key_cache": [blocks, kv, a.block_size, k_size], "value_cache": [blocks, kv, a.block_size, v_size],
            "block_indices": [None], "block_indices_begins": [splits], "subsequence_begins": [splits],
            "qb_start": [splits], "past_lens": [sequences], "sel_indices": [rows, a.h_sel, None],
            "sel_count": [rows, a.h_sel], "sel_block_mask": [rows, a.h_sel, None],
        }
        for name in layout:
            sparse.expect(infos[name], expected[name], name, label="sparse-shape", port=where(name))
        return TensorInfo(etype, PartialShape.of([tokens, a.num_heads * v_size]))

    def compute(self, *arrays: np.ndarray, written: frozenset[int] = frozenset()) -> np.ndarray:
        # The caller's caches are updated only when donated; otherwise the step works on copies.
        key_cache, value_cache = (output_buffer(arrays[i], inplace=i in written, any_layout=True)
                                  for i in (3, 4))
        return self.step(arrays, key_cache, value_cache)

    def step(self, arrays: tuple[np.ndarray, ...], key_cache: np.ndarray, value_cache: np.ndarray) -> np.ndarray:
        """Run one step, updating `key_cache` and `value_cache` in place."""
        self.infer(*sparse.shapes_of(arrays))
        layout = INDEX_PLAN if len(arrays) == len(INDEX_PLAN) else MASK_PLAN
        named = dict(zip(layout, arrays))
        a = self.attrs
        query = named["query"]
        etype = ElementType.from_dtype(query.dtype)
        work = compute_dtype(etype)
        past, begins, tables, firsts = self._sequences(named, layout, key_cache.shape[0])
        written = past + np.diff(begins)
        width = -(-int(written.max(initial=0)) // a.sel_block_size)  # selection blocks any sequence has
        if "sel_indices" in named:
            marks = self._selection(named["sel_indices"], named["sel_count"], width, layout)
        else:
            marks = named["sel_block_mask"]
            self._check_mask_width(marks, tables, layout)
        out = np.zeros((query.shape[0], a.num_heads * a.v_head_size), work)
        factor = work.type(a.scale)
        for s, table in enumerate(tables):
            first, last = int(begins[s]), int(begins[s + 1])
            if first == last:
                continue
            write_rows(key_cache, named["key"][first:last], table, int(past[s]), a.block_size)
            write_rows(value_cache, named["value"][first:last], table, int(past[s]), a.block_size)
            plan_rows = firsts[s] + np.arange(last - first) // a.q_block_size
            out[first:last] = self._attend(query[first:last], key_cache, value_cache, table, int(past[s]),
                                           marks[plan_rows], factor)
        return from_compute(out, etype)

    def _attend(self, query: np.ndarray, key_cache: np.ndarray, value_cache: np.ndarray, table: np.ndarray,
                past: int, marks: np.ndarray, factor: np.generic) -> np.ndarray:
        """The attention of one sequence's new tokens [chunk, H * Dh] given their plan rows'
        block marks [chunk, h_sel, *]; returns [chunk, H * Dv]."""
        a = self.attrs
        work = factor.dtype
        chunk = query.shape[0]
        total = past + chunk  # positions written so far: never read past them
        positions = np.arange(total)
        where = (table[positions // a.block_size], slice(None), positions % a.block_size)
        keys, values = (np.moveaxis(cache[where].astype(work), 0, 1)[None] for cache in (key_cache, value_cache))
        marks = np.moveaxis(marks[..., :-(-total // a.sel_block_size)], 1, 0)[None]  # [1, h_sel, chunk, *]
        plan = sparse.blocks_to_tokens(marks, 1, a.sel_block_size, chunk, total)
        allowed = sparse.per_query_head(plan, a.num_heads, a.num_kv_heads)
        if a.causal:
            allowed = allowed & (positions <= past + np.arange(chunk)[:, None])
        q = np.moveaxis(query.astype(work).reshape(chunk, a.num_heads, a.k_head_size), 0, 1)[None]
        out = self._heads_attended(q, keys, values, allowed, factor)  # [1, H, chunk, Dv]
        return np.moveaxis(out[0], 0, 1).reshape(chunk, -1)

    def _sequences(self, named: dict[str, np.ndarray], layout: tuple[str, ...],
                   blocks: int) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
        """past_lens, subsequence_begins, each sequence's block table and the first plan row of
        each sequence, checked."""
        a = self.attrs
        past, begins, block_begins, starts = (named[n].astype(np.int64) for n in
                                              ("past_lens", "subsequence_begins", "block_indices_begins", "qb_start"))
        table = named["block_indices"].astype(np.int64)
        count, tokens = past.size, named["query"].shape[0]
        rows = named["sel_count" if "sel_count" in named else "sel_block_mask"].shape[0]
        chunks = np.diff(begins) if begins.size == count + 1 else np.zeros(0, np.int64)
        problem, port = None, "past_lens"
        if begins.size != count + 1 or block_begins.size != count + 1 or starts.size != count + 1:
            problem = (f"{count} past_lens need {count + 1} subsequence_begins, block_indices_begins and qb_start, "
                       f"found {begins.size}, {block_begins.size} and {starts.size}")
        elif (past < 0).any():
            problem = f"past_lens must not be negative, found {past.tolist()}"
        elif begins[0] != 0 or begins[-1] != tokens or (chunks < 0).any():
            problem, port = f"subsequence_begins {begins.tolist()} must rise from 0 to the {tokens} tokens", \
                "subsequence_begins"
        elif block_begins[0] != 0 or block_begins[-1] != table.size or (np.diff(block_begins) < 0).any():
            problem, port = (f"block_indices_begins {block_begins.tolist()} must rise from 0 to the {table.size} "
                             "block_indices"), "block_indices_begins"
        elif starts[0] != 0 or starts[-1] != rows or (np.diff(starts) != -(-chunks // a.q_block_size)).any():
            problem, port = (f"qb_start {starts.tolist()} must count ceil(chunk / {a.q_block_size}) plan rows per "
                             f"sequence, from 0 to the {rows} rows"), "qb_start"
        if problem:
            raise ExecutionError(problem, label="sparse-pa-sequences", port=self._where(port, layout))
        if a.q_block_size > 1 and (past % a.q_block_size).any():
            raise ExecutionError(f"past_lens {past.tolist()} must be multiples of q_block_size {a.q_block_size}",
                                 label="sparse-history", port=self._where("past_lens", layout))
        covered = np.diff(block_begins) * a.block_size
        if ((table < 0) | (table >= blocks)).any() or (covered < past + chunks).any():
            raise ExecutionError(f"block_indices {table.tolist()} must name blocks of the cache's {blocks} and cover "
                                 f"each sequence's {(past + chunks).tolist()} positions ({a.block_size} per block)",
                                 label="sparse-pa-block-table", port=self._where("block_indices", layout))
        return past, begins, [table[block_begins[s]:block_begins[s + 1]] for s in range(count)], starts

    def _check_mask_width(self, mask: np.ndarray, tables: list[np.ndarray], layout: tuple[str, ...]) -> None:
        most = max((t.size for t in tables), default=0) * (self.attrs.block_size // self.attrs.sel_block_size)
        if tables and mask.shape[-1] != most:
            raise ExecutionError(f"sel_block_mask must hold {most} block marks per row (the most selection blocks "
                                 f"a sequence has), found {mask.shape[-1]}", label="sparse-shape",
                                 port=self._where("sel_block_mask", layout))
