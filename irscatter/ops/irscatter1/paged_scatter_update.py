"""PagedScatterUpdate-1 (irscatter1): PyPTO's `scatter_update`, a paged KV-cache write.

Inputs: 0 `cache`, 1 `index` (i16/i32/i64, shape [b, s]), 2 `src`. Attribute `dim`, which
must keep its default -2 (the only value the operation defines).

* 2-D form: cache [slots, d], src [b*s, d]: `out[index[i, j]] = src[i*s + j]`.
* 4-D form: cache [blocks, block_size, 1, d], src [b, s, 1, d]:
  `out[index[i,j] // block_size, index[i,j] % block_size, 0] = src[i, j, 0]`.

Both forms write whole rows of `d` values into the cache seen as `slots` rows, where slot
`k` of the 4-D form is block `k // block_size`, offset `k % block_size`. A negative index
marks a padding token and is skipped, as paged KV caches do; an index at or past the
number of slots is an error. Two tokens aimed at one slot: the last in row-major order wins.
Element types f32, f16, bf16, i32 and i16 (cache and src alike); empty tensors and tensors
of more than INT32_MAX elements are refused, as the operation's documentation says. The
document's parameter table swaps the shapes of `input` and `src`; its formulas and
examples, followed here, are right.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.types import same_element_type
from irscatter.ops.functional import call
from irscatter.ops.registry import register
from irscatter.ops.scatter.core import scatter_rows

DOMAIN = "irscatter"


INT32_MAX = 2**31 - 1


VALUE_TYPES = (ElementType.f32, ElementType.f16, ElementType.bf16, ElementType.i32, ElementType.i16)


INDEX_TYPES = (ElementType.i16, ElementType.i32, ElementType.i64)


class PagedAttrs(OpAttrs):
    dim: int = -2


def _expected_src(cache: PartialShape, index: PartialShape) -> PartialShape:
    if cache.rank == 2:
        b, s = index[0], index[1]
        tokens = Dimension.static(b.min * s.min) if b.is_static and s.is_static else Dimension.dynamic()
        return PartialShape.of((tokens, cache[1]))
    return PartialShape.of((index[0], index[1], 1, cache[3]))


@register("PagedScatterUpdate", 1, domain=DOMAIN)
class PagedScatterUpdate(Op):
    """Writes token rows of `src` into the cache slots named by `index` (negative: skipped)."""

    labels = {
        "dim": "dim is not -2, the only value the op defines",
        "src-type": "src's element type differs from cache's",
        "cache-type": "cache has an element type the op does not take",
        "cache-rank": "cache is neither 2-D nor 4-D",
        "cache-shape": "a 4-D cache's third dimension is not 1",
        "src-shape": "src's shape does not fit cache and index",
        "size-limit": "a tensor has more than INT32_MAX elements",
        "empty": "a tensor has no elements",
    }

    Attrs = PagedAttrs
    attrs: PagedAttrs
    inputs = ("cache", "index", "src")
    inplace_input = 0

    def infer(self, cache: TensorInfo, index: TensorInfo, src: TensorInfo) -> TensorInfo:
        check(self.attrs.dim == -2, "dim", f"dim must keep its default -2, found {self.attrs.dim}")
        etype = same_element_type(src, cache, "src must have the element type of cache", "src-type", self.port("src"))
        check(etype in (*VALUE_TYPES, ElementType.dynamic), "cache-type",
              f"cache must be one of {', '.join(map(str, VALUE_TYPES))}, found {etype}", port=self.port("cache"))
        check(index.etype in (*INDEX_TYPES, ElementType.dynamic), "index-type",
              f"index must be one of {', '.join(map(str, INDEX_TYPES))}, found {index.etype}", port=self.port("index"))
        if index.shape.rank_is_static:
            check(index.shape.rank == 2, "index-rank", f"index must be 2-D [b, s], found {index.shape}",
                  port=self.port("index"))
        for info, name, port in ((cache, "cache", self.port("cache")), (src, "src", self.port("src"))):
            if info.shape.is_static:
                n = math.prod(info.shape.to_tuple())
                check(n > 0, "empty", f"{name} must not be empty, found shape {info.shape}", port=port)
                check(n <= INT32_MAX, "size-limit",
                      f"{name} has {n} elements, more than INT32_MAX ({INT32_MAX})", port=port)
        if not (cache.shape.rank_is_static and src.shape.rank_is_static and index.shape.rank_is_static):
            return TensorInfo(etype, cache.shape)
        check(cache.shape.rank in (2, 4), "cache-rank",
              f"cache must be 2-D [slots, d] or 4-D [blocks, block_size, 1, d], found {cache.shape}", port=self.port("cache"))
        if cache.shape.rank == 4:
            check(cache.shape[2].contains(1), "cache-shape",
                  f"a 4-D cache must be [blocks, block_size, 1, d], found {cache.shape}", port=self.port("cache"))
        expected = _expected_src(cache.shape, index.shape)
        check(expected.compatible(src.shape), "src-shape",
              f"src shape {src.shape} must be {expected} for cache {cache.shape} and index {index.shape}",
              port=self.port("src"))
        return TensorInfo(etype, cache.shape)

    def compute(self, cache: np.ndarray, index: np.ndarray, src: np.ndarray, *, inplace: bool = False) -> np.ndarray:
        slots = math.prod(cache.shape[:-1])  # [blocks * block_size * 1] or [slots]
        d = cache.shape[-1]
        tokens = index.reshape(-1).astype(np.int64)
        if src.size != tokens.size * d:
            raise ExecutionError(f"src has shape {list(src.shape)}, expected {index.size} rows of {d}",
                                 port=self.port("src"))
        if tokens.size and tokens.max() >= slots:
            beyond = tokens >= slots
            pos = tuple(int(i) for i in np.argwhere(beyond.reshape(index.shape))[0])
            raise ExecutionError(f"index {int(index[pos])} at position {list(pos)} is past the cache's "
                                 f"{slots} slots (valid: [0, {slots - 1}], negative = padding, skipped)",
                                 port=self.port("index"))
        # A pure copy (no arithmetic, so no compute dtype), unless the cache is handed over.
        out = output_buffer(cache, inplace=inplace)
        rows = src.reshape(-1, d)
        if tokens.size and tokens.min() < 0:  # padding tokens write nothing
            live = tokens >= 0
            tokens, rows = tokens[live], rows[live]
        scatter_rows(out.reshape(slots, d), tokens, rows, "none")
        return out


def paged_scatter_update(cache, index, src, dim: int = -2) -> np.ndarray:
    """PyPTO `scatter_update(input, dim, index, src)` on numpy arrays; returns the updated
    cache and leaves `cache` itself untouched."""
    return call(PagedScatterUpdate, (cache, index, src), {"dim": dim})
