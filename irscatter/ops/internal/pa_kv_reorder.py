"""PaKVReorder (domain `extension`): token moves within a paged KV cache, in place.

Domain: OpenVINO declares `ov::op::internal::PaKVReorder` with the one-argument
`OPENVINO_OP("PaKVReorder")`, whose version is `extension` (an earlier form lived in the CPU
plugin as `cpu_plugin_opset`). OpenVINO GenAI's speculative decoding builds it with the
`PaKVReorderFusion` pass; OpenVINO's CPU plugin runs it but does not register it for reading,
so OpenVINO with that plugin cannot load a saved model holding it.

Sequence s owns the cache blocks `block_indices[block_indices_begins[s] :
block_indices_begins[s+1]]` and the moves `block_update_indices_begins[s]` to
`block_update_indices_begins[s+1]`, move i being the pair (`block_update_indices[2i]`,
`block_update_indices[2i+1]`) of logical token positions (source, destination) within the
sequence. Position p is slot `p % block_size` of the sequence's block number `p // block_size`.
A move copies the token's row [kv_heads, hidden] from its source slot to its destination slot,
in the key cache and in the value cache. Moves apply one after another in order, sequence after
sequence, as the page's loops and OpenVINO's CPU plugin do: a move reads what the moves before
it left (a token moved twice travels on), and of two moves to one slot the later wins. The
output is the page's status, one u8 0.

The caches are updated in place as OpenVINO's plugin does: donated caches hold the moves after
the run; caches not donated are left as they were (the moves write private copies).

Refused with a labelled error: u8 and u4 caches (the page's quantized caches: whether they are
quantized by token or by channel, and where their scales and zero points lie, is the plugin's
configuration, which a model does not record), i8 and other types the page excludes, caches that
are not 4-D or differ in blocks, heads or block size, index inputs other than 1-D i32, an odd
number of update indices, begins tables that do not rise within their tables, and a move whose
position lies outside its sequence's blocks or whose block lies outside the cache.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.internal.core import dim_value, named_dims, rising_bounds
from irscatter.ops.registry import register

DOMAIN = "extension"

CACHE_TYPES = (ElementType.f32, ElementType.f16, ElementType.bf16)
QUANTIZED = (ElementType.u8, ElementType.u4)


def rounds(sources: np.ndarray, targets: np.ndarray) -> list[slice]:
    """Cut a list of moves (slot to slot, applied in order) into runs that may each be applied
    at once: a run ends before the first move that reads a slot an earlier move of the run wrote."""
    cuts, start, count = [], 0, sources.size
    while start < count:
        written = targets[start:]
        slots, first = np.unique(written, return_index=True)  # each written slot's first writer
        place = np.minimum(np.searchsorted(slots, sources[start:]), slots.size - 1)
        reads_written = (slots[place] == sources[start:]) & (first[place] < np.arange(count - start))
        stop = start + (int(np.argmax(reads_written)) if reads_written.any() else count - start)
        cuts.append(slice(start, stop))
        start = stop
    return cuts


def last_of_each(targets: np.ndarray) -> np.ndarray:
    """The positions in `targets` of each value's last occurrence, in order."""
    _, from_end = np.unique(targets[::-1], return_index=True)
    return np.sort(targets.size - 1 - from_end)


@register("PaKVReorder", 1, domain=DOMAIN)
class PaKVReorder(Op):
    """Moves tokens between slots of a paged key and value cache, in place."""

    labels: ClassVar[dict[str, str]] = {
        "pakv-cache-type": "a cache is of a type the page does not allow (i8, or any but f32, f16, bf16, u8, u4), "
                           "or the two caches differ in type",
        "pakv-quantized": "a cache is u8 or u4: its quantization layout is plugin configuration the model does not "
                          "hold",
        "pakv-cache-layout": "a cache is not 4-D [blocks, kv_heads, block_size, hidden], or the two caches differ "
                             "in blocks, heads or block size, or the block size is 0",
        "pakv-sequences": "the begins tables differ in length or do not rise within their tables",
        "pakv-updates": "block_update_indices has an odd length, or a move names a position outside its "
                        "sequence's blocks",
        "pakv-block-table": "a move's block lies outside the cache",
    }

    inputs = ("key_cache", "value_cache", "block_indices", "block_indices_begins", "block_update_indices",
              "block_update_indices_begins")
    foldable = False
    writes_inputs = (0, 1)

    def infer(self, *infos: TensorInfo) -> TensorInfo:
        key, value = infos[:2]
        for name, info in (("key_cache", key), ("value_cache", value)):
            check(info.etype not in QUANTIZED, "pakv-quantized",
                  f"{name} is {info.etype}: a quantized cache's scales, zero points and quantization mode are "
                  f"the plugin's configuration, not the model's, so its moves cannot be computed",
                  port=self.port(name))
            check(info.etype in (*CACHE_TYPES, ElementType.dynamic), "pakv-cache-type",
                  f"{name} must be f32, f16 or bf16, found {info.etype}", port=self.port(name))
        check(ElementType.dynamic in (key.etype, value.etype) or key.etype is value.etype, "pakv-cache-type",
              f"key_cache is {key.etype} and value_cache {value.etype}: both caches are of one type T",
              port=self.port("value_cache"))
        for name, info in zip(self.inputs[2:], infos[2:]):
            check(info.etype in (ElementType.i32, ElementType.dynamic), "index-type",
                  f"{name} must be i32, found {info.etype}", port=self.port(name))
            check(not info.shape.rank_is_static or info.shape.rank == 1, "index-rank",
                  f"{name} must be 1-D, found {info.shape}", port=self.port(name))
        dims = named_dims(self, [("key_cache", key, "NHBK"), ("value_cache", value, "NHBV")],
                          "pakv-cache-layout", "pakv-cache-layout")
        check(dim_value(dims, "B") != 0, "pakv-cache-layout", "the caches' block size is 0",
              port=self.port("key_cache"))
        counts = named_dims(self, [("block_indices_begins", infos[3], "S"),
                                   ("block_update_indices_begins", infos[5], "S"),
                                   ("block_update_indices", infos[4], "U")], "index-rank", "pakv-sequences")
        updates = dim_value(counts, "U")
        check(updates is None or updates % 2 == 0, "pakv-updates",
              f"block_update_indices holds (source, destination) pairs: its {updates} values are not even",
              port=self.port("block_update_indices"))
        return TensorInfo(ElementType.u8, PartialShape.of([1]))

    def compute(self, *arrays: np.ndarray, written: frozenset[int] = frozenset()) -> np.ndarray:
        key_cache, value_cache = (output_buffer(arrays[i], inplace=i in written, any_layout=True)
                                  for i in (0, 1))
        self.move(arrays, key_cache, value_cache)
        return np.zeros(1, np.uint8)

    def move(self, arrays: tuple[np.ndarray, ...], key_cache: np.ndarray, value_cache: np.ndarray) -> None:
        """Apply the moves to `key_cache` and `value_cache` in place."""
        blocks, block_size = key_cache.shape[0], key_cache.shape[2]
        sources, targets = self._slots(arrays, blocks, block_size)
        for run in rounds(sources, targets):
            keep = run.start + last_of_each(targets[run])
            src, dst = np.divmod(sources[keep], block_size), np.divmod(targets[keep], block_size)
            for cache in (key_cache, value_cache):
                cache[dst[0], :, dst[1]] = cache[src[0], :, src[1]]

    def _slots(self, arrays: tuple[np.ndarray, ...], blocks: int, block_size: int) -> tuple[np.ndarray, np.ndarray]:
        """Every move's source and destination as cache slots (block * block_size + slot), in order."""
        table, table_begins_in, pairs_in, pair_begins_in = arrays[2:]
        if table_begins_in.size != pair_begins_in.size:
            raise ExecutionError(f"block_indices_begins has {table_begins_in.size} values and "
                                 f"block_update_indices_begins {pair_begins_in.size}: one more than the sequences "
                                 f"each", label="pakv-sequences", port=self.port("block_update_indices_begins"))
        if pairs_in.size % 2:
            raise ExecutionError(f"block_update_indices has {pairs_in.size} values, not (source, destination) "
                                 f"pairs", label="pakv-updates", port=self.port("block_update_indices"))
        table_begins = rising_bounds(self, table_begins_in, "block_indices_begins", 0, table.size, "pakv-sequences")
        pair_begins = rising_bounds(self, pair_begins_in, "block_update_indices_begins", 0, pairs_in.size // 2,
                                    "pakv-sequences")
        pairs = pairs_in.astype(np.int64).reshape(-1, 2)
        owner = np.repeat(np.arange(pair_begins.size - 1), np.diff(pair_begins))  # each move's sequence
        moves = pairs[pair_begins[0]:pair_begins[-1]]
        local = moves // block_size
        owned = (table_begins[owner + 1] - table_begins[owner])[:, None]
        bad = np.flatnonzero(((moves < 0) | (local >= owned)).any(axis=1))
        if bad.size:
            i = int(bad[0])
            raise ExecutionError(f"move {i + int(pair_begins[0])} {moves[i].tolist()} of sequence {int(owner[i])} "
                                 f"names a position outside its {int(owned[i, 0])} blocks of {block_size}",
                                 label="pakv-updates", port=self.port("block_update_indices"))
        physical = table.astype(np.int64)[table_begins[owner][:, None] + local]
        if ((physical < 0) | (physical >= blocks)).any():
            i = int(np.flatnonzero(((physical < 0) | (physical >= blocks)).any(axis=1))[0])
            raise ExecutionError(f"move {i + int(pair_begins[0])} reaches block {physical[i].tolist()}, outside the "
                                 f"cache's {blocks}", label="pakv-block-table", port=self.port("block_indices"))
        slots = physical * block_size + moves % block_size
        return slots[:, 0], slots[:, 1]
