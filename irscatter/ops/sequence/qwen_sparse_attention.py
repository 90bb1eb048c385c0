"""QwenSparseAttention-17 (a draft of opset17: the spec page defines it, the pinned OpenVINO does
not ship it): Qwen Sparse Attention, a causal grouped-query attention over the key blocks a
block indexer ranks best for each query, plus the query's own incomplete block.

query [N, H, L, E], key [N, Hkv, S, E], value [N, Hkv, S, Ev], index_query [N, Hi, L, Di] and
index_key_blocks [N, floor(S / r), Di] (r = compress_ratio); query l is at position
p = S - L + l (L <= S). For each query:

1. The complete blocks at or before p (the first (p + 1) // r) are scored: the sum over the
   indexer heads of max(0, index_query . index_key_block), in f32 (f64 for f64 inputs).
2. The token_budget / r best are chosen (all when fewer are visible), by descending score, a
   tie going to the smaller block; NaN scores rank last, as numpy's stable sort of the
   negated scores puts them (the page's pseudo-code).
3. The query attends the tokens of the chosen blocks and of its incomplete block
   (p + 1) // r * r .. p, with logits q . k times `scale` (default 1 / sqrt(E); it does not
   scale the index scores). See ops/common/sparse_attention.py for the rest of the arithmetic.

Outputs: the attention [N, H, L, Ev] (T) and `indices` [N, L, token_budget + r - 1] of
`index_element_type` (i32 or i64): each query's attended positions, the chosen blocks' tokens
in descending score order then the incomplete block's in ascending order, padded with -1.

The selection is that of the internal SparseAttentionIndexer followed by BlockSparseAttention
(ops/internal/block_sparse_attention.py), fused: both attend the same positions with the same
arithmetic (ops/common/sparse_attention.py); only the choosing of the blocks is this op's own.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import tensor_size_problem
from irscatter.ops.base import ElementTypeAttr, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import sparse_attention as sparse
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.products import matmul
from irscatter.ops.registry import register


class QwenSparseAttentionAttrs(OpAttrs):
    compress_ratio: int
    token_budget: int
    index_element_type: ElementTypeAttr = ElementType.i32


@register("QwenSparseAttention", 17)
class QwenSparseAttention(Op):
    """Causal attention over the best-scoring key blocks and the query's incomplete block."""

    labels = {
        "qsa-attrs": "compress_ratio or token_budget is not positive, token_budget is not a multiple of "
                     "compress_ratio, or index_element_type is neither i32 nor i64",
        "qsa-shape": "the inputs do not have the ranks and dimensions that fit each other (one batch, Hkv dividing "
                     "H, query's and key's E, key's and value's S, L <= S, floor(S / compress_ratio) index key "
                     "blocks, the indexer's L and Di)",
    }

    Attrs = QwenSparseAttentionAttrs
    attrs: QwenSparseAttentionAttrs
    inputs = ("query", "key", "value", "index_query", "index_key_blocks", "scale")
    optional_inputs = 1
    outputs = 2
    foldable = False

    def _check_attrs(self) -> None:
        a = self.attrs
        check(a.compress_ratio > 0 and a.token_budget > 0 and a.token_budget % a.compress_ratio == 0, "qsa-attrs",
              f"token_budget ({a.token_budget}) must be a positive multiple of compress_ratio ({a.compress_ratio})",
              port=self.port("token_budget"))
        check(a.index_element_type in (ElementType.i32, ElementType.i64), "qsa-attrs",
              f"index_element_type must be i32 or i64, found {a.index_element_type}",
              port=self.port("index_element_type"))

    def infer(self, query: TensorInfo, key: TensorInfo, value: TensorInfo, index_query: TensorInfo,
              index_key_blocks: TensorInfo, scale: TensorInfo | None = None) -> tuple[TensorInfo, TensorInfo]:
        self._check_attrs()
        a = self.attrs
        etype = sparse.float_inputs(self, query, {"key": key, "value": value, "index_query": index_query,
                                                  "index_key_blocks": index_key_blocks, "scale": scale})
        infos = {"query": query, "key": key, "value": value, "index_query": index_query,
                 "index_key_blocks": index_key_blocks}
        dims = sparse.attention_dims(self, infos, label="qsa-shape", lengths=(sparse.dim(index_query, 2),))
        sparse.check_grouping(self, dims, label="qsa-shape")
        source = dims.source
        blocks = Dimension.static(int(source) // a.compress_ratio) if source.is_static else None
        index_size = sparse.known(sparse.dim(index_query, 3), sparse.dim(index_key_blocks, 2))
        sparse.expect(index_query, [dims.batch, None, dims.length, index_size], "index_query", label="qsa-shape",
                      port=self.port("index_query"))
        sparse.expect(index_key_blocks, [dims.batch, blocks, index_size], "index_key_blocks", label="qsa-shape",
                      port=self.port("index_key_blocks"))
        width = a.token_budget + a.compress_ratio - 1
        return (TensorInfo(etype, PartialShape.of([dims.batch, dims.heads, dims.length, dims.value_size])),
                TensorInfo(a.index_element_type, PartialShape.of([dims.batch, dims.length, width])))

    def compute(self, query: np.ndarray, key: np.ndarray, value: np.ndarray, index_query: np.ndarray,
                index_key_blocks: np.ndarray, scale: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        arrays = (query, key, value, index_query, index_key_blocks) + (() if scale is None else (scale,))
        _, promised = self.infer(*sparse.shapes_of(arrays))
        if (problem := tensor_size_problem(promised.shape.to_tuple(), 8)) is not None:
            raise ExecutionError(f"indices would be too large: {problem}", label="tensor-limit",
                                 port=self.port("token_budget"))
        etype = ElementType.from_dtype(query.dtype)
        work = compute_dtype(etype)
        _, heads, length, size = query.shape
        kv, source = key.shape[1], key.shape[2]
        positions, chosen = self._selection(index_query.astype(work), index_key_blocks.astype(work), source)
        indices = _packed(positions, chosen, promised.shape.to_tuple()[-1])
        allowed = sparse.per_query_head(sparse.mark(positions, chosen, source)[:, None], heads, kv)
        sparse.check_size((query.shape[0], heads, length, source), work, self.port("key"))
        q, k, v = (x.astype(work, copy=False) for x in (query, key, value))
        out = sparse.attend(sparse.grouped(q, kv), k, v, allowed, sparse.scale_factor(scale, size, work))
        return (from_compute(out.reshape(*query.shape[:3], value.shape[3]), etype),
                indices.astype(self.attrs.index_element_type.dtype))

    def _selection(self, index_query: np.ndarray, key_blocks: np.ndarray, source: int) -> tuple[np.ndarray, np.ndarray]:
        """The candidate positions of each query [N, L, W] (its chosen blocks' tokens in rank
        order, then its incomplete block's) and which of them it attends."""
        r, budget = self.attrs.compress_ratio, self.attrs.token_budget // self.attrs.compress_ratio
        length, blocks = index_query.shape[2], key_blocks.shape[1]
        sparse.check_size((*index_query.shape[:3], blocks), index_query.dtype, self.port("index_key_blocks"))
        with np.errstate(invalid="ignore", over="ignore"):
            scores = np.maximum(matmul(index_query, np.swapaxes(key_blocks, -1, -2)[:, None]), 0).sum(axis=1)
        ends = source - length + np.arange(length) + 1  # p + 1 of each query
        visible = ends // r
        seen = np.arange(blocks) < visible[:, None]
        ranking = np.argsort(np.where(seen, -scores, np.nan), axis=-1, kind="stable")[..., :budget]
        taken = np.arange(ranking.shape[-1]) < np.minimum(visible, budget)[:, None]  # [L, k]
        block_positions = (ranking[..., None] * r + np.arange(r)).reshape(*ranking.shape[:2], ranking.shape[-1] * r)
        tail = visible[:, None] * r + np.arange(r - 1)  # [L, r - 1]
        positions = np.concatenate([block_positions, np.broadcast_to(tail, (*ranking.shape[:1], *tail.shape))], -1)
        chosen = np.concatenate([np.repeat(taken, r, axis=-1), tail < ends[:, None]], -1)
        return positions, np.broadcast_to(chosen, positions.shape)


def _packed(positions: np.ndarray, chosen: np.ndarray, width: int) -> np.ndarray:
    """The chosen positions of each row moved to its front, in order, and -1 after: [N, L, width]."""
    order = np.argsort(~chosen, axis=-1, kind="stable")
    kept = np.take_along_axis(chosen, order, -1)
    packed = np.where(kept, np.take_along_axis(positions, order, -1), -1)
    out = np.full((*positions.shape[:2], width), -1, np.int64)
    out[..., :packed.shape[-1]] = packed
    return out
