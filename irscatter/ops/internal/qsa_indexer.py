"""QSAIndexer (domain `extension`): the block selection of Qwen Sparse Attention for one step
of a fixed batch, with its key-side state passed in and returned (ReadValue/Assign outside).

Domain. OpenVINO's source defines no QSAIndexer class (no OPENVINO_OP for it, and nothing of
the name in the 2026.4 libraries), and the page's example gives no `version`. OpenVINO's other
internal ops of this kind (PagedAttentionExtension, PagedGatedDeltaNet, PagedCausalConv1D)
declare `OPENVINO_OP("Type")` with no domain, which is OpenVINO's default `extension`, and the
sibling SparseAttentionIndexer page writes `version="extension"`: so `extension`.

One step, for each batch element (the page's pseudo-code):
1. The state holds N_c block summaries and P < r pending raw keys, so the element has
   S0 = N_c * r + P positions. The step's L keys join the pending ones; each run of r that
   fills a block is pooled into a new summary (the arithmetic in block_selection.py), rotated by the
   phase of the block's first token: that token's row of `k_rope_cos_sin` when it came in this
   step, `indexer_k_start_past` when it came before. What is left pends, and
   `indexer_k_start_present` is the phase of the block still open (unchanged when none is).
2. Query l (position p = S0 + l) scores the complete blocks 0 .. (p + 1) // r - 1 of the
   updated summaries with the grouped ReLU score times `scale`, keeps the `block_topk` best by
   block_selection.py's rule and lists them in ascending block order; when p + 1 is not a multiple of r
   the block holding p follows them. The rest of the row is -1.

Choices where the page is open:
* T is f32, f16 or bf16 (its type rules list these three); others are refused (`qsa-type`).
  sel_indices and sel_count are i32, the type of the pseudo-code and the example (the page
  names int32 or int64 but no attribute chooses).
* indexer_rotary_dim must be even (rotate-half splits it in two halves) and at most
  indexer_head_dim; indexer_head_dim at least 1 and equal to the inputs' last dimension.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check, required
from irscatter.ops.internal.block_selection import agreed, block_keys, qsa_scores, query_chunks, rank_blocks
from irscatter.ops.registry import register

DOMAIN = "extension"
STATE_TYPES = (ElementType.f32, ElementType.f16, ElementType.bf16)


class QSAAttrs(OpAttrs):
    compress_ratio: int = 4
    block_topk: int
    h_sel: int = 1
    indexer_rotary_dim: int
    indexer_head_dim: int
    eps: float = 1e-6
    scale: float


class QSAChecks(Op):
    """The checks both QSA indexers make: their attributes, ranks, element types and heads."""

    labels = {
        "qsa-attribute": "an attribute is out of its range (compress_ratio, block_topk, h_sel or indexer_head_dim "
                         "below 1, indexer_rotary_dim odd or past indexer_head_dim, a page or ring size that is no "
                         "multiple of compress_ratio)",
        "qsa-rank": "an input has the wrong rank",
        "qsa-type": "a key, query or state input is not f32, f16 or bf16, or not of the others' type; an index input "
                    "is not i32 or i64",
        "qsa-shape": "inputs disagree on a dimension (batch, tokens, heads, head size, rotary width), or one differs "
                     "from what the attributes say",
        "qsa-heads": "the index-key heads are none or do not divide the index-query heads, or h_sel is neither 1 "
                     "nor their number",
    }

    Attrs: ClassVar[type[QSAAttrs]] = QSAAttrs  # PagedQSAIndexer extends the schema
    attrs: QSAAttrs
    float_inputs: tuple[str, ...] = ()
    ranks: dict[str, int] = {}

    def check_attributes(self) -> None:
        a = self.attrs
        for name in ("compress_ratio", "block_topk", "h_sel", "indexer_head_dim"):
            check(getattr(a, name) >= 1, "qsa-attribute", f"{name} must be at least 1, found {getattr(a, name)}",
                  port=self.port(name))
        check(0 <= a.indexer_rotary_dim <= a.indexer_head_dim and a.indexer_rotary_dim % 2 == 0, "qsa-attribute",
              f"indexer_rotary_dim must be even and within 0 .. indexer_head_dim ({a.indexer_head_dim}), found "
              f"{a.indexer_rotary_dim}", port=self.port("indexer_rotary_dim"))

    def check_inputs(self, given: dict[str, TensorInfo]) -> ElementType:
        """Ranks and types; returns the state type T."""
        for name, rank in self.ranks.items():
            shape = given[name].shape
            check(not shape.rank_is_static or shape.rank == rank, "qsa-rank",
                  f"{name} must be {rank}-D, found {shape}", port=self.port(name))
        etype = ElementType.dynamic
        for name in self.float_inputs:
            found = given[name].etype
            if found is ElementType.dynamic:
                continue
            check(found in STATE_TYPES, "qsa-type", f"{name} must be f32, f16 or bf16, found {found}",
                  port=self.port(name))
            check(etype in (ElementType.dynamic, found), "qsa-type",
                  f"{name} is {found}, the inputs before it {etype}: all must share one type", port=self.port(name))
            etype = found
        return etype

    def same(self, what: str, port: str, *dims: Dimension) -> Dimension:
        return required(agreed(list(dims)), "qsa-shape", f"{what} differ: {', '.join(map(str, dims))}",
                        port=self.port(port))

    def equals(self, dim: Dimension, size: int, what: str, port: str) -> None:
        check(not dim.is_static or int(dim) == size, "qsa-shape", f"{what} must be {size}, found {dim}",
              port=self.port(port))

    def infer_once(self, arrays: tuple[np.ndarray, ...]) -> None:
        """Inference on the arrays a run brings, once per set of shapes and types: the kernels
        rely on the shapes agreeing, and fed states may have shapes the model left dynamic."""
        key = tuple((a.shape, a.dtype) for a in arrays)
        self.per_shape(key, lambda: self.infer(*(TensorInfo(ElementType.from_dtype(a.dtype), PartialShape.of(a.shape))
                                                 for a in arrays)))

    def check_heads(self, q_heads: Dimension, k_heads: Dimension, port: str) -> None:
        h_sel = self.attrs.h_sel
        if not k_heads.is_static:
            return
        check(int(k_heads) >= 1, "qsa-heads", "there must be at least one index-key head", port=self.port(port))
        check(h_sel in (1, int(k_heads)), "qsa-heads",
              f"h_sel must be 1 or the {int(k_heads)} index-key heads, found {h_sel}", port=self.port("h_sel"))
        check(not q_heads.is_static or int(q_heads) % int(k_heads) == 0, "qsa-heads",
              f"the {q_heads} index-query heads must be a multiple of the {k_heads} index-key heads",
              port=self.port(port))

    def select(self, queries: np.ndarray, summaries: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, ...]:
        """The selection of queries [N, L, Hiq, D] at `positions` [N, L] among the summaries
        [N, Hik, B, D] (f32): (sel_indices [N, Hs, L, block_topk + 1], sel_count [N, Hs, L]), i32."""
        a = self.attrs
        r, width = a.compress_ratio, a.block_topk + 1
        n, length = queries.shape[:2]
        hs = a.h_sel
        indices = np.full((n, hs, length, width), -1, np.int32)
        counts = np.zeros((n, hs, length), np.int32)
        per_query = n * queries.shape[2] * max(summaries.shape[2], 1)
        for rows in query_chunks(length, per_query):
            scores = qsa_scores(queries[:, rows], summaries, hs, a.scale)  # [N, Hs, l, B]
            ends = positions[:, None, rows] + 1
            chosen, count = rank_blocks(scores, ends // r, a.block_topk, ascending=True)
            width_chosen = np.concatenate([chosen, np.full((*chosen.shape[:-1], 1), -1, np.int64)], axis=-1)
            # the block holding the query follows the chosen ones when it is incomplete
            open_block = np.broadcast_to(ends % r != 0, count.shape)
            np.put_along_axis(width_chosen, count[..., None],
                              np.where(open_block, np.broadcast_to(ends // r, count.shape), -1)[..., None], axis=-1)
            indices[:, :, rows] = width_chosen
            counts[:, :, rows] = count + open_block
        return indices, counts


INPUTS = ("q_idx", "k_idx", "k_rope_cos_sin", "summary_past", "indexer_k_past", "indexer_k_start_past",
          "k_norm_weight")


@register("QSAIndexer", 1, domain=DOMAIN)
class QSAIndexer(QSAChecks):
    """QSA's block selection for one step, its summary and pending-key state in and out."""

    labels = {"qsa-pending": "indexer_k_past holds compress_ratio pending keys or more"}

    inputs = INPUTS
    outputs = 5
    float_inputs = INPUTS
    ranks = {"q_idx": 4, "k_idx": 4, "k_rope_cos_sin": 3, "summary_past": 4, "indexer_k_past": 4,
             "indexer_k_start_past": 2, "k_norm_weight": 1}

    def infer(self, *given_infos: TensorInfo) -> tuple[TensorInfo, ...]:
        a = self.attrs
        self.check_attributes()
        given = dict(zip(INPUTS, given_infos))
        etype = self.check_inputs(given)
        shapes = {name: info.shape for name, info in given.items()}
        if not all(s.rank_is_static for s in shapes.values()):
            dyn = PartialShape.dynamic_rank()
            return (TensorInfo(ElementType.i32, dyn), TensorInfo(ElementType.i32, dyn), TensorInfo(etype, dyn),
                    TensorInfo(etype, dyn), TensorInfo(etype, dyn))
        q, k, cs, summary, pending, start, weight = shapes.values()
        batch = self.same("the batch dims of q_idx, k_idx, k_rope_cos_sin and the states", "k_idx",
                          q[0], k[0], cs[0], summary[0], pending[0], start[0])
        length = self.same("the token dims of q_idx, k_idx and k_rope_cos_sin", "k_idx", q[1], k[1], cs[1])
        k_heads = self.same("the index-key heads of k_idx, summary_past and indexer_k_past", "summary_past",
                            k[2], summary[1], pending[1])
        for name, dim in (("q_idx", q[3]), ("k_idx", k[3]), ("summary_past", summary[3]),
                          ("indexer_k_past", pending[3]), ("k_norm_weight", weight[0])):
            self.equals(dim, a.indexer_head_dim, f"{name}'s head size (indexer_head_dim)", name)
        for name, dim in (("k_rope_cos_sin", cs[2]), ("indexer_k_start_past", start[1])):
            self.equals(dim, 2 * a.indexer_rotary_dim, f"{name}'s last dimension (2 * indexer_rotary_dim)", name)
        self.check_heads(q[2], k_heads, "k_idx")
        r = a.compress_ratio
        check(not pending[2].is_static or int(pending[2]) < r, "qsa-pending",
              f"indexer_k_past holds {pending[2]} pending keys, fewer than compress_ratio ({r}) are allowed",
              port=self.port("indexer_k_past"))
        blocks = rest = Dimension.dynamic()
        if pending[2].is_static and length.is_static:
            filled = int(pending[2]) + int(length)
            rest = Dimension.static(filled % r)
            if summary[2].is_static:
                blocks = Dimension.static(int(summary[2]) + filled // r)
        head = Dimension.static(a.indexer_head_dim)
        return (TensorInfo(ElementType.i32, PartialShape.of([batch, a.h_sel, length, a.block_topk + 1])),
                TensorInfo(ElementType.i32, PartialShape.of([batch, a.h_sel, length])),
                TensorInfo(etype, PartialShape.of([batch, k_heads, blocks, head])),
                TensorInfo(etype, PartialShape.of([batch, k_heads, rest, head])),
                TensorInfo(etype, PartialShape.of([batch, 2 * a.indexer_rotary_dim])))

    def compute(self, q_idx, k_idx, k_rope_cos_sin, summary_past, indexer_k_past, indexer_k_start_past,
                k_norm_weight) -> tuple[np.ndarray, ...]:
        arrays = (q_idx, k_idx, k_rope_cos_sin, summary_past, indexer_k_past, indexer_k_start_past, k_norm_weight)
        self.infer_once(arrays)  # states fed at run time: shapes inference may not have seen
        a = self.attrs
        r = a.compress_ratio
        etype = ElementType.from_dtype(k_idx.dtype)
        n, length, k_heads, size = k_idx.shape
        known, waiting = summary_past.shape[2], indexer_k_past.shape[2]
        pending = np.concatenate([indexer_k_past, k_idx.transpose(0, 2, 1, 3)], axis=2)  # [N, Hik, P + L, D]
        filled = pending.shape[2] // r
        # Block j's first token is token j * r - P of the step; before the step (the past phase,
        # row 0 here) when that is negative. The last entry is the block left open, if any.
        phases = np.concatenate([indexer_k_start_past[:, None], k_rope_cos_sin], axis=1)
        phase_rows = phases[:, np.clip(np.arange(filled + 1) * r - waiting + 1, 0, length)]
        summaries = block_keys(pending[:, :, :filled * r].reshape(n, k_heads, filled, r, size), k_norm_weight,
                               phase_rows[:, None, :filled], a.indexer_rotary_dim, a.eps, etype)
        summary_present = np.concatenate([summary_past, summaries], axis=2)
        rest = np.ascontiguousarray(pending[:, :, filled * r:])
        start_present = np.array(phase_rows[:, filled] if rest.shape[2] else indexer_k_start_past)
        positions = np.broadcast_to(known * r + waiting + np.arange(length), (n, length))
        indices, counts = self.select(q_idx.astype(np.float32), summary_present.astype(np.float32), positions)
        return indices, counts, summary_present, rest, start_present
