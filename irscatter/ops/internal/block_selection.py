"""The arithmetic the sparse-attention indexers share (QSAIndexer, PagedQSAIndexer,
SparseAttentionIndexer): the ReLU score of index query heads against block keys, the ranking
of blocks with its tie rule, and the QSA pages' block-key chain (mean-pool, RMSNorm, RoPE).
The checks stay in the op modules, where their labels are declared.

Ranking. All three pages define the selection by numpy: `argsort(-scores, kind="stable")`,
the first k entries. So blocks rank by descending score, equal scores by the smaller block
index first (-0.0 equals 0.0). A NaN score ranks below every number, -inf included, because
numpy sorts NaN last; NaN scores among themselves rank the smaller block index first. That is
TopK's stable order except for NaN, which TopK ranks above every number: these pages' own
numpy is the rule, and OpenVINO has no kernel of these ops to say otherwise (neither its
source nor the 2026.4 plugins define them).

Block keys (QSA pages). The r raw keys of a block are averaged in f32 and the mean is rounded
to the keys' type T, as the pages' pseudo-code does (`mean(...astype(float32)).astype(T)`);
RMSNorm (`x * rsqrt(mean(x^2) + eps) * w`) and the rotation run in f32 on that value, and the
result is rounded to T once, when stored. The pages leave `rope` undefined beyond the
"rotate_half convention": a row of 2 * rot values holds rot cosines then rot sines, and the
first rot features x of a key become `x * cos + rotate_half(x) * sin`, where
`rotate_half(x) = concat(-x[rot/2:], x[:rot/2])`, the features past rot passing unrotated.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension
from irscatter.ops.common.numeric import from_compute

# The score tensors of one chunk of queries hold about this many elements at most.
CHUNK_ELEMENTS = 1 << 22


def agreed(dims: list[Dimension]) -> Dimension | None:
    """The one size several dimensions must share: the static one if any (None when two static
    sizes differ), else dynamic."""
    sizes = {int(d) for d in dims if d.is_static}
    if len(sizes) > 1:
        return None
    return Dimension.static(sizes.pop()) if sizes else Dimension.dynamic()


def query_chunks(queries: int, per_query: int) -> Iterator[slice]:
    """Slices of the query axis whose score tensors stay near CHUNK_ELEMENTS (one query at least)."""
    step = max(1, CHUNK_ELEMENTS // max(per_query, 1))
    for start in range(0, queries, step):
        yield slice(start, min(start + step, queries))


def relu_head_sum(dots: np.ndarray, groups: int, weights: np.ndarray | None = None) -> np.ndarray:
    """dots [..., H, L, B] (head h of query l against block b) to scores [..., groups, L, B]:
    each head's product rectified, times its weight [..., H, L] when given, then summed over
    `groups` runs of H / groups consecutive heads."""
    rectified = np.maximum(dots, dots.dtype.type(0))  # NaN stays NaN, as numpy.maximum keeps it
    if weights is not None:
        rectified = weights[..., None] * rectified
    *lead, heads, queries, blocks = rectified.shape
    return rectified.reshape(*lead, groups, heads // groups, queries, blocks).sum(axis=-3)


def rank_blocks(scores: np.ndarray, visible: np.ndarray, width: int, *,
                ascending: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The selection of every row of `scores` [..., B]: of its blocks `0 .. visible - 1`
    (`visible` [...] broadcast to the rows, at most B), the `width` best by the module's rule.
    Returns (indices [..., width] int64 padded with -1, count [...] int64). The chosen blocks
    are in rank order, or in ascending block order when `ascending`."""
    blocks = scores.shape[-1]
    visible = np.broadcast_to(np.minimum(visible, blocks), scores.shape[:-1])
    with np.errstate(invalid="ignore"):
        keys = np.where(np.arange(blocks) < visible[..., None], -scores, np.nan)
    order = np.argsort(keys, axis=-1, kind="stable")[..., :width]
    if order.shape[-1] < width:
        pad = np.full((*order.shape[:-1], width - order.shape[-1]), -1, np.int64)
        order = np.concatenate([order, pad], axis=-1)
    count = np.minimum(visible, width).astype(np.int64)
    taken = np.arange(width) < count[..., None]
    if ascending:
        order = np.sort(np.where(taken, order, blocks), axis=-1)  # the untaken sort past the taken
    return np.where(taken, order, -1), count


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """`x * rsqrt(mean(x^2) + eps) * weight` over the last axis, in f32."""
    x = x.astype(np.float32, copy=False)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        inverse = np.float32(1) / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + np.float32(eps))
        return x * inverse * weight.astype(np.float32)


def rope(x: np.ndarray, cos_sin: np.ndarray, rotary: int) -> np.ndarray:
    """The first `rotary` features of x [..., D] rotated by cos_sin [..., 2 * rotary] (cosines,
    then sines) in the rotate-half convention; the rest pass as they are. f32."""
    if rotary == 0:
        return x
    half = rotary // 2
    cos, sin = cos_sin[..., :rotary].astype(np.float32), cos_sin[..., rotary:].astype(np.float32)
    part = x[..., :rotary]
    turned = np.concatenate([-part[..., half:], part[..., :half]], axis=-1)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.concatenate([part * cos + turned * sin, x[..., rotary:]], axis=-1)


def block_keys(raw: np.ndarray, weight: np.ndarray, cos_sin: np.ndarray, rotary: int, eps: float,
               etype: ElementType) -> np.ndarray:
    """The summary key of each block from its raw keys [..., r, D] of type `etype` and its
    block-start phase [..., 2 * rotary] (broadcast to the blocks): pooled, normalized, rotated,
    rounded to `etype`."""
    with np.errstate(over="ignore"):
        pooled = from_compute(np.mean(raw.astype(np.float32), axis=-2), etype)
    return from_compute(rope(rms_norm(pooled, weight, eps), cos_sin, rotary), etype)


def qsa_scores(queries: np.ndarray, keys: np.ndarray, selection_heads: int, scale: float) -> np.ndarray:
    """The QSA pages' score of queries [N, L, Hiq, D] against the summary keys [N, Hik, B, D]
    (f32 both): index query head h reads key head h // (Hiq / Hik), and the heads of a key head
    (all of them when `selection_heads` is 1) are summed, then scaled. Returns [N, Hs, L, B]."""
    n, length, q_heads, size = queries.shape
    k_heads = keys.shape[1]
    grouped = queries.reshape(n, length, k_heads, q_heads // k_heads, size).transpose(0, 2, 3, 1, 4)
    with np.errstate(over="ignore", invalid="ignore"):
        dots = np.matmul(grouped, keys[:, :, None].swapaxes(-1, -2))  # [N, Hik, G, L, B]
        scores = relu_head_sum(dots.reshape(n, q_heads, length, keys.shape[2]), selection_heads)
        return scores * scores.dtype.type(scale)
