"""SparseAttentionIndexer (domain `extension`): the key blocks each query token attends to in
dynamic sparse attention (Qwen Sparse Attention with blocks of r tokens, DeepSeek Sparse
Attention with r = 1), for BlockSparseAttention to read.

Domain. The page's examples write `version="extension"`. OpenVINO's source defines no class of
the name (nothing of it in the 2026.4 libraries either); its internal ops of this kind declare
`OPENVINO_OP("Type")`, whose default domain is `extension`. Both say `extension`.

The queries are the last L of S = `key_length` key positions: query l of every sequence is at
p = S - L + l. Its visible blocks are the complete ones at or before it, 0 .. (p + 1) // r - 1;
each is scored by the heads of every selection head g (index query heads g*G .. g*G + G - 1,
G = Hi / Hs): the sum over those heads of `index_weights[n, l, h] * max(q_h . key_b, 0)`, the
weights 1 when not given. The `token_budget / r` best by block_selection.py's rule (descending score,
equal scores the smaller block first, NaN last) fill the row in that order, the rest of it -1;
`block_count` says how many. Scores are computed in f32 (f64 for f64 inputs).

Refused with a label: `key_length` not a scalar or one value (`sai-key-length`), S < L, or
`index_key_blocks` holding other than floor(S / r) blocks (the page's definition of B).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check, required
from irscatter.ops.common.numeric import compute_dtype
from irscatter.ops.common.ranges import Bounds, extent
from irscatter.ops.common.types import arithmetic_float
from irscatter.ops.internal.block_selection import agreed, query_chunks, rank_blocks, relu_head_sum
from irscatter.ops.registry import register

DOMAIN = "extension"
INPUTS = ("index_query", "index_key_blocks", "key_length", "index_weights")
IndexType = Annotated[Literal["i32", "i64"], Lower]


class SparseAttentionIndexerAttrs(OpAttrs):
    compress_ratio: int
    token_budget: int
    num_selection_heads: int = 1
    index_element_type: IndexType = "i32"


@register("SparseAttentionIndexer", 1, domain=DOMAIN)
class SparseAttentionIndexer(Op):
    """Per query token, the best-scoring complete key blocks within a budget."""

    Attrs = SparseAttentionIndexerAttrs
    attrs: SparseAttentionIndexerAttrs
    inputs = INPUTS
    optional_inputs = 1
    outputs = 2
    ranks = {"index_query": (4,), "index_key_blocks": (3,), "key_length": (0, 1), "index_weights": (3,)}

    labels = {
        "sai-attribute": "compress_ratio, token_budget or num_selection_heads is below 1, or token_budget is no "
                         "multiple of compress_ratio",
        "sai-rank": "an input has the wrong rank",
        "sai-type": "index_query, index_key_blocks and index_weights are not of one float type, or key_length is "
                    "not i32 or i64",
        "sai-shape": "the inputs disagree on the batch, the query tokens, the index heads or the head size",
        "sai-heads": "num_selection_heads does not divide the index query heads",
        "sai-key-length": "key_length is not one value, is below the query tokens, or gives another number of "
                          "complete blocks than index_key_blocks holds",
    }

    def infer(self, *given_infos: TensorInfo) -> tuple[TensorInfo, ...]:
        a = self.attrs
        for name in ("compress_ratio", "token_budget", "num_selection_heads"):
            check(getattr(a, name) >= 1, "sai-attribute", f"{name} must be at least 1, found {getattr(a, name)}",
                  port=self.port(name))
        check(a.token_budget % a.compress_ratio == 0, "sai-attribute",
              f"token_budget ({a.token_budget}) must be a multiple of compress_ratio ({a.compress_ratio})",
              port=self.port("token_budget"))
        given = dict(zip(INPUTS, given_infos))
        self._check_types(given)
        for name, info in given.items():
            check(not info.shape.rank_is_static or info.shape.rank in self.ranks[name], "sai-rank",
                  f"{name} must have rank {' or '.join(map(str, self.ranks[name]))}, found {info.shape}",
                  port=self.port(name))
        out_type = ElementType.from_attribute(a.index_element_type)
        width = a.token_budget // a.compress_ratio
        hs = a.num_selection_heads
        query, keys = given["index_query"].shape, given["index_key_blocks"].shape
        if not (query.rank_is_static and keys.rank_is_static):
            return (TensorInfo(out_type, PartialShape.dynamic_rank()), TensorInfo(out_type, PartialShape.dynamic_rank()))
        batch, length = self._check_dims(given, query, keys)
        self._check_key_length(given["key_length"], length, keys[1])
        return (TensorInfo(out_type, PartialShape.of([batch, hs, length, width])),
                TensorInfo(out_type, PartialShape.of([batch, hs, length])))

    def _check_types(self, given: dict[str, TensorInfo]) -> None:
        etype = ElementType.dynamic
        for name in ("index_query", "index_key_blocks", "index_weights"):
            found = given[name].etype if name in given else ElementType.dynamic
            if found is ElementType.dynamic:
                continue
            check(arithmetic_float(found) and etype in (ElementType.dynamic, found), "sai-type",
                  f"{name} is {found}: index_query, index_key_blocks and index_weights must share one float type",
                  port=self.port(name))
            etype = found
        found = given["key_length"].etype
        check(found in (ElementType.i32, ElementType.i64, ElementType.dynamic), "sai-type",
              f"key_length must be i32 or i64, found {found}", port=self.port("key_length"))

    def _same(self, what: str, port: str, *dims: Dimension) -> Dimension:
        return required(agreed(list(dims)), "sai-shape", f"{what} differ: {', '.join(map(str, dims))}",
                        port=self.port(port))

    def _check_dims(self, given: dict[str, TensorInfo], query: PartialShape,
                    keys: PartialShape) -> tuple[Dimension, Dimension]:
        given_weights = given.get("index_weights")
        weights = given_weights.shape if given_weights is not None and given_weights.shape.rank_is_static else None
        batch = self._same("the batch dims of the inputs", "index_key_blocks", query[0], keys[0],
                           *([weights[0]] if weights is not None else []))
        self._same("the head sizes of index_query and index_key_blocks", "index_key_blocks", query[3], keys[2])
        length, heads = query[2], query[1]
        if weights is not None:
            length = self._same("the query tokens of index_query and index_weights", "index_weights", length, weights[1])
            heads = self._same("the index heads of index_query and index_weights", "index_weights", heads, weights[2])
        hs = self.attrs.num_selection_heads
        check(not heads.is_static or int(heads) % hs == 0, "sai-heads",
              f"num_selection_heads ({hs}) must divide the {heads} index query heads", port=self.port("index_query"))
        return batch, length

    def _check_key_length(self, info: TensorInfo, length: Dimension, blocks: Dimension) -> None:
        port = self.port("key_length")
        shape = info.shape
        check(not shape.is_static or shape.rank == 0 or int(shape[0]) == 1, "sai-key-length",
              f"key_length must hold one value, found shape {shape}", port=port)
        if info.value is None or info.value.size != 1:
            return
        total = int(info.value.reshape(-1)[0])
        r = self.attrs.compress_ratio
        check(not length.is_static or total >= int(length), "sai-key-length",
              f"key_length ({total}) must be at least the {length} query tokens", port=port)
        check(not blocks.is_static or total // r == int(blocks), "sai-key-length",
              f"key_length {total} makes {total // r} complete blocks of {r}, index_key_blocks holds {blocks}",
              port=port)

    def input_range(self, position: int, infos) -> Bounds | None:
        if INPUTS[position] != "key_length":
            return None
        blocks, length = extent(infos[1], 1), extent(infos[0], 2)
        if blocks is None or length is None:
            return None
        r = self.attrs.compress_ratio
        low, high = max(blocks * r, length), blocks * r + r - 1
        return (low, high) if low <= high else None

    def compute(self, index_query: np.ndarray, index_key_blocks: np.ndarray, key_length: np.ndarray,
                index_weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        arrays = [index_query, index_key_blocks, key_length] + ([] if index_weights is None else [index_weights])
        key = (tuple((x.shape, x.dtype) for x in arrays), key_length.tobytes())
        self.per_shape(key, lambda: self.infer(*(TensorInfo.of(x) for x in arrays)))  # run-time shapes and length
        a = self.attrs
        r, hs, width = a.compress_ratio, a.num_selection_heads, a.token_budget // a.compress_ratio
        work = compute_dtype(ElementType.from_dtype(index_query.dtype))
        n, heads, length, size = index_query.shape
        blocks = index_key_blocks.shape[1]
        ends = int(key_length.reshape(-1)[0]) - length + 1 + np.arange(length)  # p + 1 of each query
        queries = index_query.astype(work)
        keys = index_key_blocks.astype(work)[:, None].swapaxes(-1, -2)  # [N, 1, Di, B]
        weights = None if index_weights is None else index_weights.astype(work).transpose(0, 2, 1)  # [N, Hi, L]
        out_type = ElementType.from_attribute(a.index_element_type).dtype
        indices = np.full((n, hs, length, width), -1, out_type)
        counts = np.zeros((n, hs, length), out_type)
        for rows in query_chunks(length, n * heads * max(blocks, 1)):
            with np.errstate(over="ignore", invalid="ignore"):
                scores = relu_head_sum(np.matmul(queries[:, :, rows], keys), hs,
                                       None if weights is None else weights[:, :, rows])
            chosen, count = rank_blocks(scores, ends[rows] // r, width)
            indices[:, :, rows], counts[:, :, rows] = chosen, count
        return indices, counts
