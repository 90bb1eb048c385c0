"""SparseSDPA (domain `extension`): attention of each query over the key blocks an upstream
selector chose for it, on dense [B, H, L, D] key and value tensors.

The domain. OpenVINO's source has no class for SparseSDPA (nor for SparsePA, its paged twin):
the page is a draft of an internal op. Its siblings that OpenVINO does define for the paged
pipeline (PagedAttentionExtension, PagedGatedDeltaNet, PagedCausalConv1D) declare themselves
with the one-argument `OPENVINO_OP(name)`, whose version id is "extension", and the sparse
attention page that writes a version (BlockSparseAttention) writes `version="extension"`; so
SparseSDPA registers there, as SparsePA and BlockSparseAttention do.

The selection. Query row l (at position q = S - L + l, the last L of the S keys) belongs to
query block l // q_block_size, and the selection head of query head h is h // (H / h_sel). A
plan names key blocks of sel_block_size tokens in one of two forms:

* `sel_indices` [B, h_sel, ceil(L / q_block_size), K] with `sel_count` [B, h_sel, ...]: the
  first sel_count entries of a row are the chosen blocks. The page's contract is checked and a
  plan that breaks it is refused (`sparse-plan`): a count outside [0, K], a negative index
  among the counted ones, or counted indices that do not strictly ascend. Blocks past the keys
  are cut at S, as the page says.
* no index plan, and `attn_mask` carries the selection (every block chosen).

A key k is attended when its block is chosen, when `causal` is off or k <= q, and when
`attn_mask` allows it: a boolean mask is true there, a float mask is not -inf there (and its
value is added to the logit). The mask broadcasts to [B, d, L, S], d being 1, h_sel or H.
Logits are q . k times `scale` (default 1 / sqrt(k_head_size)); see ops/common/sparse_attention.py
for the softmax, the rows that attend nothing (zeros) and values never read.

The inputs. The page numbers them query, key, value, sel_indices, sel_count, attn_mask, scale,
and drops sel_indices and sel_count for a mask plan, the later inputs moving up (its example 3
gives attn_mask as input 3). With 4 inputs the plan is the mask; with 5, input 4 of rank 0 or 1
is a scale after a mask plan and any other is sel_count; 6 and 7 hold an index plan. With
q_block_size > 1 the history S - L must be a multiple of it (`sparse-history`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import sparse_attention as sparse
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.registry import register

DOMAIN = "extension"


class SelectionAttrs(OpAttrs):
    num_heads: int
    num_kv_heads: int
    h_sel: int
    k_head_size: int
    v_head_size: int
    sel_block_size: int
    q_block_size: int = 1
    causal: IRBool = True


class SelectedBlocks(Op):
    """What SparseSDPA and SparsePA share: the head and block attributes, the index plan and
    its contract, and the port of an input wherever the layout puts it."""

    attrs: SelectionAttrs

    labels = {
        "sparse-attrs": "the head counts or sizes do not fit each other (num_kv_heads and h_sel must divide "
                        "num_heads, h_sel is 1, num_kv_heads or num_heads, sizes are positive)",
        "sparse-shape": "an input's rank or dimensions do not fit the attributes or the other inputs",
        "sparse-mask-type": "a mask input is of a type the op does not take",
        "sparse-plan": "a selection breaks its contract: a count outside [0, K], a negative index among the "
                       "counted ones, or counted indices that do not strictly ascend",
        "sparse-history": "with q_block_size > 1, a history length is not a multiple of q_block_size",
    }

    foldable = False

    def _where(self, name: str, layout: tuple[str, ...]) -> str:
        """The port of input `name` in this layout (named as the declaration names that position)."""
        return self.port(self.inputs[layout.index(name)])

    def _check_attrs(self) -> None:
        a = self.attrs
        check(a.num_heads > 0 and a.num_kv_heads > 0 and a.num_heads % a.num_kv_heads == 0, "sparse-attrs",
              f"num_kv_heads ({a.num_kv_heads}) must divide num_heads ({a.num_heads}), both positive",
              port=self.port("num_kv_heads"))
        check(a.h_sel in (1, a.num_kv_heads, a.num_heads), "sparse-attrs",
              f"h_sel must be 1, num_kv_heads ({a.num_kv_heads}) or num_heads ({a.num_heads}), found {a.h_sel}",
              port=self.port("h_sel"))
        for name in ("k_head_size", "v_head_size"):
            check(getattr(a, name) >= 0, "sparse-attrs", f"{name} must not be negative", port=self.port(name))
        for name in ("sel_block_size", "q_block_size"):
            check(getattr(a, name) > 0, "sparse-attrs", f"{name} must be positive", port=self.port(name))

    def _check_index_types(self, infos: dict[str, TensorInfo], layout: tuple[str, ...], names: tuple[str, ...]) -> None:
        for name in names:
            if name in infos:
                check(infos[name].etype in sparse.INDEX_TYPES, "index-type",
                      f"{name} must be i32 or i64, found {infos[name].etype}", port=self._where(name, layout))

    def _selection(self, indices: np.ndarray, count: np.ndarray, blocks: int,
                   layout: tuple[str, ...]) -> np.ndarray:
        """An index plan as block marks [..., blocks] after checking its contract; counted
        blocks at or past `blocks` lie past the keys and mark nothing."""
        size = indices.shape[-1]
        counts = count.astype(np.int64)
        problem, port = None, "sel_count"
        if ((counts < 0) | (counts > size)).any():
            problem = f"sel_count holds {_first(counts, (counts < 0) | (counts > size))}, outside [0, {size}]"
        counted = np.arange(size) < counts[..., None]
        picked = indices.astype(np.int64)
        if problem is None:
            port = "sel_indices"
            if (counted & (picked < 0)).any():
                problem = f"sel_indices holds {_first(picked, counted & (picked < 0))} among the counted entries"
            elif (falling := counted[..., 1:] & (picked[..., 1:] <= picked[..., :-1])).any():
                row = np.argwhere(falling)[0]
                problem = (f"the counted sel_indices of row {row[:-1].tolist()} do not strictly ascend "
                           f"({picked[tuple(row[:-1])][:counts[tuple(row[:-1])]].tolist()})")
        if problem:
            raise ExecutionError(problem, label="sparse-plan", port=self._where(port, layout))
        return sparse.mark(picked, counted, blocks)

    def _heads_attended(self, query: np.ndarray, key: np.ndarray, value: np.ndarray, allowed: np.ndarray,
                        factor: np.generic, bias: np.ndarray | None = None) -> np.ndarray:
        """Attention of query [N, H, L, E] over key and value [N, Hkv, S, *] in the compute
        dtype, `allowed` (and `bias`) in the grouped layout; returns [N, H, L, Ev]."""
        kv = key.shape[1]
        n, heads, length, _ = query.shape
        sparse.check_size((n, heads, length, key.shape[2]), query.dtype, self.port("key"))
        out = sparse.attend(sparse.grouped(query, kv), key, value, allowed, factor, bias)
        return out.reshape(n, heads, length, value.shape[-1])


def _first(values: np.ndarray, bad: np.ndarray) -> str:
    where = np.argwhere(bad)[0]
    return f"{int(values[tuple(where)])} at {where.tolist()}"


INPUTS = ("query", "key", "value", "sel_indices", "sel_count", "attn_mask", "scale")
_MASK_PLAN = ("query", "key", "value", "attn_mask", "scale")


def layout_of(infos: tuple[TensorInfo, ...]) -> tuple[str, ...]:
    """The input names of a SparseSDPA layer, in order (see the module's docstring)."""
    if len(infos) == 4:
        return _MASK_PLAN[:4]
    if len(infos) == 5:
        fourth = infos[4].shape
        if fourth.rank_is_static:
            scale_like = fourth.rank <= 1
        else:
            scale_like = infos[3].etype not in sparse.INDEX_TYPES
        return _MASK_PLAN if scale_like else INPUTS[:5]
    return INPUTS[:len(infos)]


@register("SparseSDPA", 1, domain=DOMAIN)
class SparseSDPA(SelectedBlocks):
    """Selected-block attention over dense key and value tensors."""

    labels = {"sparse-mask-shape": "attn_mask does not broadcast to [B, d, L, S] with d 1, h_sel or num_heads"}

    Attrs = SelectionAttrs
    attrs: SelectionAttrs
    inputs = INPUTS
    optional_inputs = 3

    def infer(self, *given: TensorInfo) -> TensorInfo:
        layout = layout_of(given)
        infos = dict(zip(layout, given))
        where = partial(self._where, layout=layout)
        self._check_attrs()
        a = self.attrs
        q, k, v = infos["query"], infos["key"], infos["value"]
        etype = sparse.float_inputs(self, q, {"key": k, "value": v, "scale": infos.get("scale")}, where)
        self._check_index_types(infos, layout, ("sel_indices", "sel_count"))
        mask = infos.get("attn_mask")
        if mask is not None:
            check(mask.etype in (ElementType.boolean, ElementType.dynamic) or etype is ElementType.dynamic
                  or mask.etype is etype, "sparse-mask-type",
                  f"attn_mask must be boolean or {etype}, found {mask.etype}", port=where("attn_mask"))
        batch = sparse.known(sparse.dim(q, 0), sparse.dim(k, 0), sparse.dim(v, 0))
        length, source = sparse.dim(q, 2), sparse.known(sparse.dim(k, 2), sparse.dim(v, 2))
        rows = sparse.ceil_blocks(length, a.q_block_size)
        expected: dict[str, list[sparse.Expected]] = {"query": [batch, a.num_heads, None, a.k_head_size], "key": [batch, a.num_kv_heads, source,
                    a.k_head_size], "value": [batch, a.num_kv_heads, source, a.v_head_size],
                    "sel_indices": [batch, a.h_sel, rows, None], "sel_count": [batch, a.h_sel, rows]}
        for name, dims in expected.items():
            if name in infos:
                sparse.expect(infos[name], dims, name, label="sparse-shape", port=where(name))
        if mask is not None:
            self._check_mask(mask.shape, (batch, length, source), where("attn_mask"))
        if a.q_block_size > 1 and length.is_static and source.is_static:
            check((int(source) - int(length)) % a.q_block_size == 0, "sparse-history",
                  f"the history S - L = {int(source) - int(length)} must be a multiple of q_block_size "
                  f"{a.q_block_size}", port=self.port("q_block_size"))
        return TensorInfo(etype, PartialShape.of([batch, a.num_heads, length, a.v_head_size]))

    def _check_mask(self, shape: PartialShape, dims: tuple[Dimension, Dimension, Dimension], port: str) -> None:
        if not shape.rank_is_static:
            return
        batch, length, source = dims
        heads = {1, self.attrs.h_sel, self.attrs.num_heads}
        padded = [Dimension.static(1)] * (4 - shape.rank) + list(shape.ranked_dims)
        fits = shape.rank <= 4 and all(
            d.contains(1) or d.compatible(want) for d, want in zip(padded, (batch, Dimension.dynamic(), length, source)))
        fits = fits and (padded[1].is_dynamic or int(padded[1]) in heads)
        check(fits, "sparse-mask-shape", f"attn_mask {shape} does not broadcast to [B, d, L, S] = [{batch}, d, "
              f"{length}, {source}] with d one of {sorted(heads)}", port=port)

    def compute(self, *arrays: np.ndarray) -> np.ndarray:
        layout = layout_of(sparse.shapes_of(arrays))
        self.infer(*sparse.shapes_of(arrays))
        named = dict(zip(layout, arrays))
        a = self.attrs
        query, key, value = named["query"], named["key"], named["value"]
        etype = ElementType.from_dtype(query.dtype)
        work = compute_dtype(etype)
        batch, heads, length, _ = query.shape
        source = key.shape[2]
        allowed = np.ones((1, 1, 1, 1, 1), bool)
        if "sel_indices" in named:
            marks = self._selection(named["sel_indices"], named["sel_count"], -(-source // a.sel_block_size), layout)
            plan = sparse.blocks_to_tokens(marks, a.q_block_size, a.sel_block_size, length, source)
            allowed = sparse.per_query_head(plan, heads, a.num_kv_heads)
        if a.causal:
            allowed = allowed & (np.arange(source) <= source - length + np.arange(length)[:, None])
        bias = None
        mask = named.get("attn_mask")
        if mask is not None:
            mask = np.broadcast_to(mask.reshape((1,) * (4 - mask.ndim) + mask.shape),
                                   (batch, mask.shape[-3] if mask.ndim >= 3 else 1, length, source))
            mask = sparse.per_query_head(mask, heads, a.num_kv_heads)
            if mask.dtype == np.bool_:
                allowed = allowed & mask
            else:
                finite = mask != -np.inf
                allowed = allowed & finite
                bias = np.where(finite, mask.astype(work), work.type(0))
        factor = sparse.scale_factor(named.get("scale"), a.k_head_size, work)
        q, k, v = (x.astype(work, copy=False) for x in (query, key, value))
        return from_compute(self._heads_attended(q, k, v, allowed, factor, bias), etype)
