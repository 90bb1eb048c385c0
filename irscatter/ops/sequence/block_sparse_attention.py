"""BlockSparseAttention-17 (a draft of opset17: the spec page defines it, the pinned OpenVINO
does not ship it): attention in which each query block attends only to the key/value blocks
listed for it.

query [B, H, L, E], key [B, Hk, S, E], value [B, Hk, S, Ev] with Hk either H or 1, and
block_indices [B, Hb, L / block_size, k_blocks] with Hb either H or 1 (one shared head, as for
key and value). L and S are multiples of block_size; query row l is in query block
l // block_size and key block b holds the positions b * block_size .. (b + 1) * block_size - 1.
Query row l of head h attends the positions of the blocks listed in its query block's row
(of head h, or the shared one), leaving out an entry whose `block_indices_mask` is false (or 0:
u8 is accepted as boolean) and an index outside [0, S / block_size); with `causal`, only the
positions k <= l (counted from the top left, the first query at position 0, whatever S is).
The logits are q . k times `scale` (default 1 / sqrt(E)).

A block listed twice in a row is attended twice: the page (and OpenVINO's reference kernel)
collect the positions of each listed entry, so its positions count twice in the softmax. A row
that attends nothing is zeros. See ops/common/sparse_attention.py for the softmax, the precision
(OpenVINO's reference accumulates in T; irscatter in f32 for the narrow types) and the values
of unattended positions (never read).

Where the page and OpenVINO's shape inference differ: OpenVINO merges the batch dimensions of
the inputs by broadcasting (one may be 1); the page gives every input the batch B and so does
irscatter (`block-sparse-shape`), as OpenVINO's reference kernel, which reads each input with its
own batch, needs.

The same type name in domain `extension` is another op (ops/internal/block_sparse_attention.py):
per-token selections with a count, the incomplete block of the query, no causal flag. The two
share the arithmetic of ops/common/sparse_attention.py.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import sparse_attention as sparse
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.registry import register


class BlockSparseAttentionAttrs(OpAttrs):
    block_size: int
    causal: IRBool = False


@register("BlockSparseAttention", 17)
class BlockSparseAttention(Op):
    """Attention of each query block over its listed key/value blocks."""

    labels = {
        "block-sparse-size": "block_size is not positive",
        "block-sparse-shape": "the inputs are not 4-D with one batch, key/value and block_indices heads of H or 1, "
                              "query's and key's E, key's and value's S, L and S multiples of block_size, L / "
                              "block_size query blocks, and a mask of block_indices' shape",
        "block-sparse-mask-type": "block_indices_mask is neither boolean nor u8",
    }

    Attrs = BlockSparseAttentionAttrs
    attrs: BlockSparseAttentionAttrs
    inputs = ("query", "key", "value", "block_indices", "block_indices_mask", "scale")
    optional_inputs = 2
    foldable = False

    def infer(self, query: TensorInfo, key: TensorInfo, value: TensorInfo, block_indices: TensorInfo,
              block_indices_mask: TensorInfo | None = None, scale: TensorInfo | None = None) -> TensorInfo:
        size = self.attrs.block_size
        check(size > 0, "block-sparse-size", f"block_size must be positive, found {size}",
              port=self.port("block_size"))
        etype = sparse.float_inputs(self, query, {"key": key, "value": value, "scale": scale})
        check(block_indices.etype is ElementType.dynamic or (block_indices.etype.is_integral
                                                             and not block_indices.etype.is_packed), "index-type",
              f"block_indices must be of an integer type, found {block_indices.etype}",
              port=self.port("block_indices"))
        if block_indices_mask is not None:
            check(block_indices_mask.etype in (ElementType.boolean, ElementType.u8, ElementType.dynamic),
                  "block-sparse-mask-type", f"block_indices_mask must be boolean or u8, found "
                  f"{block_indices_mask.etype}", port=self.port("block_indices_mask"))
        infos = {"query": query, "key": key, "value": value, "block_indices": block_indices,
                 "block_indices_mask": block_indices_mask}
        dims = sparse.attention_dims(self, infos, label="block-sparse-shape")
        plan = [sparse.known(sparse.dim(block_indices, a), sparse.dim(block_indices_mask, a)) for a in (1, 2, 3)]
        if dims.length.is_static and int(dims.length) % size == 0:  # one row of blocks per query block
            plan[1] = Dimension.static(int(dims.length) // size)
        for name in ("block_indices", "block_indices_mask"):
            if infos[name] is not None:
                sparse.expect(infos[name], [dims.batch, *plan], name, label="block-sparse-shape", port=self.port(name))
        for name, part in (("key", dims.kv_heads), ("block_indices", plan[0])):
            check(not (dims.heads.is_static and part.is_static) or int(part) in (1, int(dims.heads)),
                  "block-sparse-shape", f"{name} must have 1 or query's {dims.heads} heads, found {part}",
                  port=self.port(name))
        for name, extent in (("query", dims.length), ("key", dims.source)):
            check(not extent.is_static or int(extent) % size == 0, "block-sparse-shape",
                  f"{name}'s length {extent} must be a multiple of block_size {size}", port=self.port(name))
        return TensorInfo(etype, PartialShape.of([dims.batch, dims.heads, dims.length, dims.value_size]))

    def compute(self, query: np.ndarray, key: np.ndarray, value: np.ndarray, block_indices: np.ndarray,
                block_indices_mask: np.ndarray | None = None, scale: np.ndarray | None = None) -> np.ndarray:
        arrays = tuple(a for a in (query, key, value, block_indices, block_indices_mask, scale) if a is not None)
        self.infer(*sparse.shapes_of(arrays))
        etype = ElementType.from_dtype(query.dtype)
        work = compute_dtype(etype)
        size = self.attrs.block_size
        _, heads, length, _ = query.shape
        kv, source = key.shape[1], key.shape[2]
        if kv == 0:  # no heads at all (H = Hk = 0)
            return np.zeros((*query.shape[:3], value.shape[3]), query.dtype)
        listed = np.ones(block_indices.shape, bool) if block_indices_mask is None else block_indices_mask != 0
        counts = sparse.mark(block_indices, listed, source // size, counts=True).astype(work)
        weight = sparse.blocks_to_tokens(counts, size, size, length, source)
        if self.attrs.causal:
            weight = weight * (np.arange(source) <= np.arange(length)[:, None])
        sparse.check_size((query.shape[0], heads, length, source), work, self.port("key"))
        q, k, v = (x.astype(work, copy=False) for x in (query, key, value))
        out = sparse.attend(sparse.grouped(q, kv), k, v, sparse.per_query_head(weight, heads, kv),
                            sparse.scale_factor(scale, query.shape[3], work))
        return from_compute(out.reshape(*query.shape[:3], value.shape[3]), etype)
