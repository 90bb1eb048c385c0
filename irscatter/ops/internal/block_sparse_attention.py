"""BlockSparseAttention (domain `extension`): grouped-query attention in which each query token
attends only to the key blocks an indexer selected for it and to the incomplete block holding
it (Qwen Sparse Attention's attention stage; with compress_ratio 1, DeepSeek Sparse
Attention's). Its opset-17 namesake (ops/sequence/block_sparse_attention.py) is another op:
per query block selections, a padding mask, top-left causality and no incomplete block.

The domain: the page's examples write `version="extension"`, the version id of the
one-argument `OPENVINO_OP(name)` that OpenVINO's paged-attention family of internal ops use;
OpenVINO's source has no class of this op.

query [N, H, L, E], key [N, Hkv, S, E], value [N, Hkv, S, Ev]: query l is at position
p = S - L + l (L <= S). block_indices [N, Hs, L, KB] and block_count [N, Hs, L] give each
query token, per selection head (query head h uses h // (H / Hs)), its blocks: block b holds
the positions b * r .. b * r + r - 1 (r = compress_ratio). A query attends to the positions
of the first block_count blocks of its row and to its incomplete block
floor((p + 1) / r) * r .. p, and to nothing else; the logits are q . k times `scale`
(default 1 / sqrt(E)). See ops/common/sparse_attention.py for the softmax and the rows that
attend nothing (zeros, as the page says).

The page leaves a block index outside [0, (p + 1) // r) or repeated within a row undefined.
irscatter attends a listed block's positions that exist (those before S: a block before the
query's own is attended, a later one too, as the pseudo-code's mask would; one past the keys
or negative gives nothing) and a repeated block once, as the pseudo-code's mask does; strict
mode reports each such entry (`sparse-block-range`, `sparse-block-repeated`). A block_count outside
[0, KB] is refused (`bsa-count`).
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import sparse_attention as sparse
from irscatter.ops.common import strict
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.registry import register

DOMAIN = "extension"


@register("BlockSparseAttention", 1, domain=DOMAIN)
class BlockSparseAttention(Op):
    """Attention over each query's selected key blocks and its own incomplete block."""

    labels = {
        "bsa-ratio": "compress_ratio is not positive",
        "bsa-shape": "query, key, value, block_indices and block_count do not have the ranks and dimensions that "
                     "fit each other (L <= S, Hkv and Hs dividing H)",
        "bsa-count": "a block_count lies outside [0, KB]",
        "sparse-block-range": "strict mode: a selected block lies outside [0, (p + 1) / compress_ratio) for its query",
        "sparse-block-repeated": "strict mode: a selected block is listed twice in one row",
    }

    class Attrs(OpAttrs):
        compress_ratio: int
    attrs: Attrs

    inputs = ("query", "key", "value", "block_indices", "block_count", "scale")
    optional_inputs = 1
    foldable = False

    def infer(self, query: TensorInfo, key: TensorInfo, value: TensorInfo, block_indices: TensorInfo,
              block_count: TensorInfo, scale: TensorInfo | None = None) -> TensorInfo:
        ratio = self.attrs.compress_ratio
        check(ratio > 0, "bsa-ratio", f"compress_ratio must be positive, found {ratio}", port=self.port("compress_ratio"))
        etype = sparse.float_inputs(self, query, {"key": key, "value": value, "scale": scale})
        for name, info in (("block_indices", block_indices), ("block_count", block_count)):
            check(info.etype in sparse.INDEX_TYPES, "index-type", f"{name} must be i32 or i64, found {info.etype}",
                  port=self.port(name))
        infos = {"query": query, "key": key, "value": value, "block_indices": block_indices,
                 "block_count": block_count}
        dims = sparse.attention_dims(self, infos, label="bsa-shape",
                                     lengths=(sparse.dim(block_indices, 2), sparse.dim(block_count, 2)))
        sparse.check_grouping(self, dims, label="bsa-shape")
        selections = sparse.known(sparse.dim(block_indices, 1), sparse.dim(block_count, 1))
        for name, rank in (("block_indices", 4), ("block_count", 3)):
            sparse.expect(infos[name], [dims.batch, selections, dims.length, None][:rank], name, label="bsa-shape",
                          port=self.port(name))
        if dims.heads.is_static and selections.is_static:
            check(int(selections) > 0 and int(dims.heads) % int(selections) == 0, "bsa-shape",
                  f"block_indices' {selections} selection heads must divide query's {dims.heads}",
                  port=self.port("block_indices"))
        return TensorInfo(etype, PartialShape.of([dims.batch, dims.heads, dims.length, dims.value_size]))

    def compute(self, query: np.ndarray, key: np.ndarray, value: np.ndarray, block_indices: np.ndarray,
                block_count: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
        arrays = (query, key, value, block_indices, block_count) + (() if scale is None else (scale,))
        self.infer(*sparse.shapes_of(arrays))
        etype = ElementType.from_dtype(query.dtype)
        work = compute_dtype(etype)
        _, heads, length, size = query.shape
        kv, source = key.shape[1], key.shape[2]
        allowed = sparse.per_query_head(self._selected(block_indices, block_count, length, source), heads, kv)
        factor = sparse.scale_factor(scale, size, work)
        sparse.check_size((query.shape[0], heads, length, source), work, self.port("key"))
        q, k, v = (x.astype(work, copy=False) for x in (query, key, value))
        out = sparse.attend(sparse.grouped(q, kv), k, v, allowed, factor)
        return from_compute(out.reshape(*query.shape[:3], value.shape[3]), etype)

    def _selected(self, indices: np.ndarray, count: np.ndarray, length: int, source: int) -> np.ndarray:
        """The positions each query row attends, per selection head: [N, Hs, L, S]."""
        ratio = self.attrs.compress_ratio
        size = indices.shape[-1]
        counts = count.astype(np.int64)
        if ((counts < 0) | (counts > size)).any():
            bad = np.argwhere((counts < 0) | (counts > size))[0]
            raise ExecutionError(f"block_count holds {int(counts[tuple(bad)])} at {bad.tolist()}, outside [0, {size}]",
                                 label="bsa-count", port=self.port("block_count"))
        counted = np.arange(size) < counts[..., None]
        if strict.active():
            self._report(indices, counted, source - length + np.arange(length))
        marks = sparse.mark(indices, counted, -(-source // ratio))
        positions = np.arange(source)
        query_positions = source - length + np.arange(length)
        tail = (positions >= (query_positions[:, None] + 1) // ratio * ratio) & (positions <= query_positions[:, None])
        return sparse.blocks_to_tokens(marks, 1, ratio, length, source) | tail

    def _report(self, indices: np.ndarray, counted: np.ndarray, query_positions: np.ndarray) -> None:
        """Strict mode: counted entries outside [0, (p + 1) // r) or repeated within a row."""
        picked = indices.astype(np.int64)
        limit = ((query_positions + 1) // self.attrs.compress_ratio)[:, None]
        port = self.port("block_indices")
        strict.report_values(counted & ((picked < 0) | (picked >= limit)), picked, label="sparse-block-range",
                             port=port, evidence=(port, self.port("block_count")), what="block index",
                             consequence="the page leaves it undefined; irscatter attends those of its positions "
                             "that exist before S")
        order = np.argsort(np.where(counted, picked, np.iinfo(np.int64).max), axis=-1, kind="stable")
        ranked, kept = np.take_along_axis(picked, order, -1), np.take_along_axis(counted, order, -1)
        again = np.zeros_like(counted)
        np.put_along_axis(again, order[..., 1:], kept[..., 1:] & kept[..., :-1] & (ranked[..., 1:] == ranked[..., :-1]),
                          -1)
        strict.report_values(again, picked, label="sparse-block-repeated", port=port,
                             evidence=(port, self.port("block_count")), what="block index repeated in its row",
                             consequence="the page leaves it undefined; irscatter attends the block once")
