"""PagedAttentionExtension (domain `extension`): causal attention over a paged KV cache, and the
write of the step's keys and values into it.

OpenVINO GenAI produces the op from a stateful LLM with `paged_attention_transformation` and
runs it for continuous batching; the saved model tags it `version="extension"`. One call is one
step of several sequences at once. Sequence s owns the rows `subsequence_begins[s]` to
`subsequence_begins[s+1]` of query, key and value (its new tokens), has `past_lens[s]` tokens
cached already, and its cache blocks are `block_indices[block_indices_begins[s] :
block_indices_begins[s+1]]`, in order: logical position p of the sequence is slot
`p % block_size` of block `table[p // block_size]`.

What a step does, for each sequence:

1. Re-rotation (inputs 14-16, when `rotated_block_indices` is not empty): the keys stored in
   each listed block are rotated by the row of `rotation_trig_lut` that `rotation_deltas` names
   (one row per block: shape [Nrot] or [Nrot, 1]; one per slot: [Nrot, block_size]), split-half
   as LLaMA's RoPE: `x'[d] = x[d] cos[d] - x[d+S/2] sin[d]`, `x'[d+S/2] = x[d] sin[d] +
   x[d+S/2] cos[d]`, the row holding the S/2 cosines then the S/2 sines. As OpenVINO's CPU
   plugin does, every slot of a listed block is rotated, in the cache itself, before the step's
   keys are written.
2. The write: the new token at logical position p (from `past_lens[s]` on) goes to its slot;
   key row [Hkv * S] as [Hkv, S] into `key_cache[block, :, slot, :]`, value likewise. The
   seeds' `PagedScatterUpdate` (irscatter1) writes the same rows to the same slots
   (`tests/ops/internal` checks the two against each other).
3. Attention: query token i (position q = past + i) of head h attends, through kv head
   `h // (Hq / Hkv)` (GQA), to the cached positions k with `start <= k <= q`, where `start` is
   `q + 1 - sliding_window` when the window is positive and `q + 1 - max_context_len` when that
   is positive, whichever is later (the page's rule), else 0. The logit is `q . k * scale`
   (`scale` 0 means 1/sqrt(S), as in the CPU plugin), plus `alibi_slopes[h] * (k - q)` when
   slopes are given; a position whose block is -1 (the page's "no valid data") is left out.
   The softmax takes `exp(sinks[h])` into its denominator when `sinks` is given. Logits,
   softmax and sums are computed in f32 (f64 for f64 inputs), from the cache as stored.

Outputs: 0 the attention [T, Hq * Sv]; 1 the scores [sum over sequences of past + new]: for
each sequence, in order, for each of its positions, the softmax weights given to it summed over
the heads and the query tokens of the score window (`score_aggregation_window`, a scalar or
one per sequence: 0 none, N > 0 the last N new tokens, negative all; empty, as the
transformation writes it, the last token, which is what OpenVINO's CPU plugin computes);
2 the adaptive-RKV diversity scores, empty since the op is only run without that feature.

The caches. OpenVINO's plugin writes into the key_cache and value_cache tensors it is given,
so after an inference the caller's tensors hold the step's keys and values; GenAI feeds the
same tensors to the next step. irscatter does the same with the caches the caller donates
(`model.run(feeds, donate=["key_cache.0", "value_cache.0", ...])`): after the run they hold
the caches as they are after the step. Fed caches that are not donated are left as they were
(inputs are never written unless donated); the step then works on a private copy.
`paged_attention(...)` returns the updated caches alongside the outputs.

Refused with a labelled error rather than guessed: `write_kv_cache="false"`, caches of any
type but f32, f16 and bf16 or of any rank but 4 (the plugin's quantized u8/u4/i8 layouts),
xattention when it would be active (threshold given, one sequence, prefill with no past),
adaptive RKV (`adaptive_rkv_evictable_sizes` not empty), `token_type_ids`, `qq_bias`, and a
block table that does not cover a sequence's positions or names a block outside the cache.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irscatter.errors import ExecutionError, IRError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.buffers import output_buffer
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import arithmetic_float
from irscatter.ops.functional import make_op
from irscatter.ops.registry import register

DOMAIN = "extension"

CACHE_TYPES = (ElementType.f32, ElementType.f16, ElementType.bf16)

INPUTS = (
    "query", "key", "value", "key_cache", "value_cache", "past_lens", "subsequence_begins", "block_indices",
    "block_indices_begins", "scale", "sliding_window", "alibi_slopes", "max_context_len",
    "score_aggregation_window", "rotated_block_indices", "rotation_deltas", "rotation_trig_lut",
    "xattention_threshold", "xattention_block_size", "xattention_stride", "sinks", "adaptive_rkv_start_size",
    "adaptive_rkv_evictable_sizes", "adaptive_rkv_diversity_block_set_indices",
    "adaptive_rkv_diversity_block_set_indices_begins", "token_type_ids", "qq_bias", "qq_bias_begins",
)

# Each input's allowed ranks and element types (None: any float type), as OpenVINO's core checks them.
_I32 = (ElementType.i32,)
_SIGNATURE = {
    "query": ((2,), None), "key": ((2,), None), "value": ((2,), None),
    "key_cache": ((2, 3, 4, 5), ()), "value_cache": ((2, 3, 4, 5), ()),
    "past_lens": ((1,), _I32), "subsequence_begins": ((1,), _I32), "block_indices": ((1,), _I32),
    "block_indices_begins": ((1,), _I32), "scale": ((0,), None), "sliding_window": ((0,), _I32),
    "alibi_slopes": ((1,), None), "max_context_len": ((0,), _I32), "score_aggregation_window": ((0, 1), _I32),
    "rotated_block_indices": ((1,), _I32), "rotation_deltas": ((1, 2), _I32),
    "rotation_trig_lut": ((1, 2), (ElementType.f16, ElementType.f32)),
    "xattention_threshold": ((1,), (ElementType.f16, ElementType.f32)), "xattention_block_size": ((0,), _I32),
    "xattention_stride": ((0,), _I32), "sinks": ((1, 4), ()), "adaptive_rkv_start_size": ((0,), _I32),
    "adaptive_rkv_evictable_sizes": ((1,), _I32), "adaptive_rkv_diversity_block_set_indices": ((1,), _I32),
    "adaptive_rkv_diversity_block_set_indices_begins": ((1,), _I32), "token_type_ids": ((1, 2), _I32),
    "qq_bias": ((1,), (ElementType.u8,)), "qq_bias_begins": ((1,), _I32),
}

# Inputs whose only supported value is empty, with what they would switch on.
_REFUSED_UNLESS_EMPTY = {
    "adaptive_rkv_evictable_sizes": "adaptive RKV eviction (diversity scores)",
    "token_type_ids": "token types (bidirectional attention within image tokens)",
    "qq_bias": "a query-to-query bias (tree attention)",
}


class PagedAttentionAttrs(OpAttrs):
    write_kv_cache: IRBool = True


@dataclass(frozen=True)
class Geometry:
    """The head layout, read from the shapes of one step."""

    heads: int
    kv_heads: int
    head_size: int
    value_head_size: int
    block_size: int
    blocks: int


@dataclass(frozen=True)
class Sequence:
    """One sequence of the step: its token rows, its past, and its block table."""

    first: int
    new: int
    past: int
    table: np.ndarray

    @property
    def total(self) -> int:
        return self.past + self.new


@register("PagedAttentionExtension", 1, domain=DOMAIN)
class PagedAttentionExtension(Op):
    """Attention over a paged KV cache, writing the step's keys and values into it."""

    labels = {
        "pa-input-rank": "an input has a rank OpenVINO's core does not allow for it",
        "pa-input-type": "an input has an element type OpenVINO's core does not allow for it",
        "pa-features": "query, key and value's feature sizes do not divide into heads",
        "pa-cache-layout": "a cache is not 4-D [blocks, kv_heads, block_size, head_size] of f32, f16 or bf16, "
                           "or does not fit key and value",
        "pa-sequences": "past_lens, subsequence_begins and block_indices_begins do not describe the same "
                        "sequences, or subsequence_begins does not cover query's rows in order",
        "pa-block-table": "a sequence's blocks do not cover its positions, or name a block outside the cache",
        "pa-unsupported": "the step asks for a feature irscatter does not compute "
                          "(write_kv_cache=false, xattention, adaptive RKV, token types, qq_bias)",
        "pa-rotation": "the re-rotation inputs do not fit each other or the cache",
        "pa-window": "score_aggregation_window has neither one value nor one per sequence",
    }

    Attrs = PagedAttentionAttrs
    attrs: PagedAttentionAttrs
    inputs = INPUTS
    optional_inputs = 3  # the page lists 25 inputs; OpenVINO 2026 writes 28
    outputs = 3
    foldable = False
    writes_inputs = (3, 4)

    def infer(self, *given: TensorInfo) -> tuple[TensorInfo, ...]:
        for name, info in zip(INPUTS, given):
            self._check_signature(name, info)
        check(self.attrs.write_kv_cache, "pa-unsupported",
              "write_kv_cache=false (the step's keys written by another op) is not supported",
              port=self.port("write_kv_cache"))
        query, key, value, key_cache, value_cache = given[:5]
        for name, cache in (("key_cache", key_cache), ("value_cache", value_cache)):
            check(cache.etype in (*CACHE_TYPES, ElementType.dynamic), "pa-cache-layout",
                  f"{name} must be f32, f16 or bf16, found {cache.etype} (quantized caches are not supported)",
                  port=self.port(name))
            check(not cache.shape.rank_is_static or cache.shape.rank == 4, "pa-cache-layout",
                  f"{name} must be 4-D [blocks, kv_heads, block_size, head_size], found {cache.shape}",
                  port=self.port(name))
        etype = query.etype
        return (TensorInfo(etype, self._output_shape(query.shape, key.shape, value.shape)),
                TensorInfo(etype, self._scores_shape(key.shape, given[5])),
                TensorInfo(etype, PartialShape.of([0])))

    def _check_signature(self, name: str, info: TensorInfo) -> None:
        ranks, types = _SIGNATURE[name]
        if info.shape.rank_is_static:
            check(info.shape.rank in ranks, "pa-input-rank",
                  f"{name} must have rank {' or '.join(map(str, ranks))}, found {info.shape}", port=self.port(name))
        if info.etype is ElementType.dynamic or types == ():
            return
        allowed = arithmetic_float(info.etype) if types is None else info.etype in types
        wanted = "a floating-point type" if types is None else " or ".join(map(str, types))
        check(allowed, "pa-input-type", f"{name} must be {wanted}, found {info.etype}", port=self.port(name))

    def _output_shape(self, query: PartialShape, key: PartialShape, value: PartialShape) -> PartialShape:
        if not query.rank_is_static:
            return PartialShape.of([Dimension.dynamic(), Dimension.dynamic()])
        features = Dimension.dynamic()
        if key.rank_is_static and value.rank_is_static and all(s[1].is_static for s in (query, key, value)):
            q, k, v = (int(s[1]) for s in (query, key, value))
            check(k != 0 and q * v % k == 0, "pa-features",
                  f"query's features times value's ({q} x {v}) must be a multiple of key's ({k})",
                  port=self.port("key"))
            features = Dimension.static(q * v // k)
        return PartialShape.of([query[0], features])

    @staticmethod
    def _scores_shape(key: PartialShape, past_lens: TensorInfo) -> PartialShape:
        if past_lens.value is not None and key.rank_is_static and key[0].is_static:
            return PartialShape.of([int(key[0]) + int(past_lens.value.astype(np.int64).sum())])
        return PartialShape.of([Dimension.dynamic()])

    def compute(self, *arrays: np.ndarray, written: frozenset[int] = frozenset()) -> tuple[np.ndarray, ...]:
        # The caller's caches are updated only when donated; otherwise the step works on copies.
        key_cache, value_cache = (output_buffer(arrays[i], inplace=i in written, any_layout=True)
                                  for i in (3, 4))
        return self.step(arrays, key_cache, value_cache)

    def step(self, arrays: tuple[np.ndarray, ...], key_cache: np.ndarray,
             value_cache: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Run one step, updating `key_cache` and `value_cache` in place."""
        named = dict(zip(INPUTS, arrays))
        self._refuse_unsupported(named)
        query, key, value = named["query"], named["key"], named["value"]
        geometry = self._geometry(query, key, value, key_cache, value_cache)
        sequences = self._sequences(named, query.shape[0], geometry)
        etype = ElementType.from_dtype(query.dtype)
        work = compute_dtype(etype)
        self._rotate(named, key_cache, geometry, work)
        out = np.zeros((query.shape[0], geometry.heads * geometry.value_head_size), work)
        scores = []
        windows = self._score_windows(named["score_aggregation_window"], len(sequences))
        settings = self._settings(named, geometry, work)
        for sequence, window in zip(sequences, windows):
            if sequence.new == 0:  # a sequence with nothing new this step: no write, no weights
                scores.append(np.zeros(sequence.total, work))
                continue
            rows = slice(sequence.first, sequence.first + sequence.new)
            self._write(key_cache, key[rows], sequence, geometry)
            self._write(value_cache, value[rows], sequence, geometry)
            if sequence.new > 1:
                _clear_tail(value_cache, sequence, geometry.block_size)
            attended, weights = self._attend(query[rows], key_cache, value_cache, sequence, geometry, settings, work)
            out[rows] = attended
            scores.append(_scored(weights, window))
        all_scores = np.concatenate(scores) if scores else np.zeros(0, work)
        return (from_compute(out, etype), from_compute(all_scores.astype(work), etype), np.zeros(0, query.dtype))

    def _refuse_unsupported(self, named: dict[str, np.ndarray]) -> None:
        for name, feature in _REFUSED_UNLESS_EMPTY.items():
            if name in named and named[name].size:
                raise ExecutionError(f"{name} is not empty: {feature} is not supported", label="pa-unsupported",
                                     port=self.port(name))
        threshold = named.get("xattention_threshold")
        if threshold is None or not threshold.size:
            return
        past, begins = named["past_lens"], named["subsequence_begins"]
        block, stride = int(named["xattention_block_size"]), int(named["xattention_stride"])
        # The conditions under which the op turns xattention on; otherwise attention is dense.
        if past.size == 1 and past[0] == 0 and begins[-1] - begins[0] > 1 and block > 0 and stride > 0:
            raise ExecutionError("xattention is active for this step (one sequence, prefill, threshold, block size "
                                 "and stride given): sparse xattention is not supported",
                                 label="pa-unsupported", port=self.port("xattention_threshold"))

    def _geometry(self, query: np.ndarray, key: np.ndarray, value: np.ndarray, key_cache: np.ndarray,
                  value_cache: np.ndarray) -> Geometry:
        for name, cache in (("key_cache", key_cache), ("value_cache", value_cache)):
            if cache.ndim != 4 or ElementType.from_dtype(cache.dtype) not in CACHE_TYPES:
                raise ExecutionError(f"{name} must be 4-D f32, f16 or bf16, found {cache.dtype}{list(cache.shape)}",
                                     label="pa-cache-layout", port=self.port(name))
        blocks, kv_heads, block_size, head_size = key_cache.shape
        value_head_size = value_cache.shape[3]
        if value_cache.shape[:3] != key_cache.shape[:3] or kv_heads == 0 or block_size == 0:
            raise ExecutionError(f"value_cache {list(value_cache.shape)} must share blocks, kv heads and block size "
                                 f"with key_cache {list(key_cache.shape)}, none of them 0",
                                 label="pa-cache-layout", port=self.port("value_cache"))
        if key.shape[1] != kv_heads * head_size or value.shape[1] != kv_heads * value_head_size:
            raise ExecutionError(f"key [T, {key.shape[1]}] and value [T, {value.shape[1]}] must be [T, kv_heads * "
                                 f"head_size] for the caches {list(key_cache.shape)} and {list(value_cache.shape)}",
                                 label="pa-cache-layout", port=self.port("key_cache"))
        heads = query.shape[1] // head_size if head_size else 0
        if head_size == 0 or query.shape[1] != heads * head_size or heads % kv_heads:
            raise ExecutionError(f"query [T, {query.shape[1]}] must be [T, heads * {head_size}] with the heads a "
                                 f"multiple of the cache's {kv_heads} kv heads", label="pa-features",
                                 port=self.port("query"))
        if key.shape[0] != query.shape[0] or value.shape[0] != query.shape[0]:
            raise ExecutionError(f"query, key and value must have one row per token, found {query.shape[0]}, "
                                 f"{key.shape[0]} and {value.shape[0]}", label="pa-features", port=self.port("key"))
        return Geometry(heads, kv_heads, head_size, value_head_size, block_size, blocks)

    def _sequences(self, named: dict[str, np.ndarray], tokens: int, geometry: Geometry) -> list[Sequence]:
        past = named["past_lens"].astype(np.int64)
        begins = named["subsequence_begins"].astype(np.int64)
        block_begins = named["block_indices_begins"].astype(np.int64)
        blocks = named["block_indices"].astype(np.int64)
        count = past.size
        problem = None
        if begins.size != count + 1 or block_begins.size != count + 1:
            problem = (f"{count} past_lens need {count + 1} subsequence_begins and block_indices_begins, found "
                       f"{begins.size} and {block_begins.size}")
        elif (past < 0).any():
            problem = f"past_lens must not be negative, found {past.tolist()}"
        elif begins[0] != 0 or begins[-1] != tokens or (np.diff(begins) < 0).any():
            problem = f"subsequence_begins {begins.tolist()} must rise from 0 to the {tokens} query rows"
        elif block_begins[0] < 0 or block_begins[-1] > blocks.size or (np.diff(block_begins) < 0).any():
            problem = f"block_indices_begins {block_begins.tolist()} must rise within the {blocks.size} block_indices"
        if problem:
            raise ExecutionError(problem, label="pa-sequences", port=self.port("past_lens"))
        sequences = []
        for s in range(count):
            sequence = Sequence(int(begins[s]), int(begins[s + 1] - begins[s]), int(past[s]),
                                blocks[block_begins[s]:block_begins[s + 1]])
            self._check_table(s, sequence, geometry)
            sequences.append(sequence)
        return sequences

    def _check_table(self, s: int, sequence: Sequence, geometry: Geometry) -> None:
        needed = -(-sequence.total // geometry.block_size)
        table = sequence.table[:needed]
        problem = None
        if table.size < needed:
            problem = (f"sequence {s} has {sequence.total} positions, {needed} blocks of {geometry.block_size}, "
                       f"but its block table lists {table.size}")
        elif ((table < -1) | (table >= geometry.blocks)).any():
            problem = f"sequence {s}'s block table {table.tolist()} names a block outside the cache's {geometry.blocks}"
        else:
            written = table[sequence.past // geometry.block_size:]
            if sequence.new and (written < 0).any():
                problem = f"sequence {s} writes its new tokens into block -1 (its table is {table.tolist()})"
        if problem:
            raise ExecutionError(problem, label="pa-block-table", port=self.port("block_indices"))

    def _settings(self, named: dict[str, np.ndarray], geometry: Geometry, work: np.dtype) -> dict:
        scale = float(named["scale"])
        alibi = named["alibi_slopes"]
        sinks = named.get("sinks")
        for name, array in (("alibi_slopes", alibi), ("sinks", sinks)):
            if array is not None and array.size and array.size != geometry.heads:
                raise ExecutionError(f"{name} must have one value per query head ({geometry.heads}), found "
                                     f"{list(array.shape)}", label="pa-features", port=self.port(name))
        return {
            "scale": work.type(scale if scale != 0 else 1 / np.sqrt(geometry.head_size)),
            "sliding_window": int(named["sliding_window"]),
            "max_context_len": int(named["max_context_len"]),
            "alibi": alibi.astype(work).reshape(-1) if alibi.size else None,
            "sinks": sinks.astype(work).reshape(-1) if sinks is not None and sinks.size else None,
        }

    def _score_windows(self, window: np.ndarray, count: int) -> list[int]:
        if window.size == 0:
            return [1] * count  # what OpenVINO's CPU plugin scores without a window: the last token
        if window.size == 1:
            return [int(window.reshape(()))] * count
        if window.size != count:
            raise ExecutionError(f"score_aggregation_window has {window.size} values for {count} sequences",
                                 label="pa-window", port=self.port("score_aggregation_window"))
        return [int(w) for w in window]

    @staticmethod
    def _slots(sequence: Sequence, positions: np.ndarray, block_size: int) -> tuple[np.ndarray, np.ndarray]:
        """The (block, slot) of each logical position of a sequence."""
        return sequence.table[positions // block_size], positions % block_size

    def _write(self, cache: np.ndarray, rows: np.ndarray, sequence: Sequence, geometry: Geometry) -> None:
        write_rows(cache, rows, sequence.table, sequence.past, geometry.block_size)

    def _attend(self, query: np.ndarray, key_cache: np.ndarray, value_cache: np.ndarray, sequence: Sequence,
                geometry: Geometry, settings: dict, work: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        """The attention of one sequence's new tokens [new, Hq * Sv] and their softmax weights
        [Hq, new, total]."""
        positions = np.arange(sequence.total)
        blocks, slots = self._slots(sequence, positions, geometry.block_size)
        present = blocks >= 0
        keys = key_cache[np.where(present, blocks, 0), :, slots, :].astype(work)  # [total, Hkv, S]
        values = value_cache[np.where(present, blocks, 0), :, slots, :].astype(work)  # [total, Hkv, Sv]
        group = geometry.heads // geometry.kv_heads
        q = query.astype(work).reshape(sequence.new, geometry.kv_heads, group, geometry.head_size)
        logits = np.einsum("nkgs,tks->kgnt", q, keys).reshape(geometry.heads, sequence.new, sequence.total)
        logits *= settings["scale"]
        query_positions = sequence.past + np.arange(sequence.new)
        distance = positions[None, :] - query_positions[:, None]  # k - q, [new, total]
        if settings["alibi"] is not None:
            logits += settings["alibi"][:, None, None] * distance.astype(work)[None]
        allowed = (distance <= 0) & present[None, :] & (distance > -self._span(settings, query_positions)[:, None])
        logits = np.where(allowed[None], logits, work.type(-np.inf))
        weights = _softmax(logits, settings["sinks"], work)
        out = np.einsum("kgnt,tkv->nkgv", weights.reshape(geometry.kv_heads, group, sequence.new, sequence.total),
                        values)
        return out.reshape(sequence.new, -1), weights

    @staticmethod
    def _span(settings: dict, query_positions: np.ndarray) -> np.ndarray:
        """How many positions up to and including its own each query token may see."""
        span = query_positions + 1
        for limit in (settings["sliding_window"], settings["max_context_len"]):
            if limit > 0:
                span = np.minimum(span, limit)
        return span

    def _rotate(self, named: dict[str, np.ndarray], key_cache: np.ndarray, geometry: Geometry,
                work: np.dtype) -> None:
        rotated = named.get("rotated_block_indices")
        if rotated is None or not rotated.size:
            return
        deltas, table = named["rotation_deltas"], named["rotation_trig_lut"]
        size = geometry.head_size
        lut = table.astype(work).reshape(-1, size) if table.size % size == 0 and size % 2 == 0 else None
        problem = None
        if lut is None:
            problem = f"rotation_trig_lut {list(table.shape)} must hold rows of the even head size {size}"
        elif deltas.ndim == 2 and deltas.shape[1] not in (1, geometry.block_size) or deltas.shape[0] != rotated.size:
            problem = (f"rotation_deltas {list(deltas.shape)} must be [{rotated.size}], [{rotated.size}, 1] or "
                       f"[{rotated.size}, {geometry.block_size}]")
        elif ((rotated < 0) | (rotated >= geometry.blocks)).any():
            problem = f"rotated_block_indices {rotated.tolist()} name blocks outside the cache's {geometry.blocks}"
        elif deltas.size and ((deltas < 0) | (deltas >= lut.shape[0])).any():
            problem = f"rotation_deltas name rows outside rotation_trig_lut's {lut.shape[0]}"
        if problem:
            raise ExecutionError(problem, label="pa-rotation", port=self.port("rotation_deltas"))
        assert lut is not None  # a table of the wrong size is the first problem above
        rows = np.broadcast_to(deltas.reshape(rotated.size, -1), (rotated.size, geometry.block_size))
        half = size // 2
        cos = lut[rows, :half][:, None]  # [Nrot, 1, Bs, S/2], one row per slot
        sin = lut[rows, half:][:, None]
        keys = key_cache[rotated].astype(work)  # [Nrot, Hkv, Bs, S]
        first, second = keys[..., :half], keys[..., half:]
        turned = np.concatenate([first * cos - second * sin, first * sin + second * cos], axis=-1)
        key_cache[rotated] = from_compute(turned, ElementType.from_dtype(key_cache.dtype))


def write_rows(cache: np.ndarray, rows: np.ndarray, table: np.ndarray, first: int, block_size: int) -> None:
    """Store a sequence's token rows [n, kv_heads * size] at its logical positions first ..
    first + n - 1: position p goes to slot p % block_size of block table[p // block_size] of
    the cache [blocks, kv_heads, block_size, size], rounded to the cache's type."""
    positions = np.arange(first, first + len(rows))
    stored = rows.reshape(len(positions), cache.shape[1], -1)
    if stored.dtype != cache.dtype:
        stored = from_compute(stored.astype(np.float32), ElementType.from_dtype(cache.dtype))
    cache[table[positions // block_size], :, positions % block_size, :] = stored


def _clear_tail(cache: np.ndarray, sequence: Sequence, block_size: int) -> None:
    """Zero the slots after a sequence's last position in its last block. They hold no token;
    OpenVINO's CPU plugin zeroes them in the value cache when a sequence brings more than one
    token (so that its block products never meet stale NaNs), and irscatter does the same so that
    the caches compare equal."""
    used = sequence.total % block_size
    if used:
        cache[sequence.table[sequence.total // block_size], :, used:, :] = 0


def _softmax(logits: np.ndarray, sinks: np.ndarray | None, work: np.dtype) -> np.ndarray:
    """Softmax over the last axis; a head's sink adds exp(sink) to the denominator only."""
    with np.errstate(invalid="ignore", over="ignore"):
        top = logits.max(axis=-1, keepdims=True)
        if sinks is not None:
            top = np.maximum(top, sinks[:, None, None])
        weights = np.exp(logits - top)
        total = weights.sum(axis=-1, keepdims=True)
        if sinks is not None:
            total += np.exp(sinks[:, None, None] - top)
        return (weights / total).astype(work, copy=False)


def _scored(weights: np.ndarray, window: int) -> np.ndarray:
    """One sequence's region of the scores: the weights of its last `window` query tokens (all
    when negative, none when 0) summed over heads and tokens, per position."""
    new = weights.shape[1]
    if window == 0:
        return np.zeros(weights.shape[2], weights.dtype)
    chosen = weights if window < 0 else weights[:, max(new - window, 0):]
    return chosen.sum(axis=(0, 1))


def paged_attention(*arrays, write_kv_cache: bool = True) -> tuple[np.ndarray, ...]:
    """The op on numpy arrays (inputs in the op's order, 25 to 28 of them). Returns
    (attention, scores, diversity, key_cache, value_cache): the caches as they are after the
    step, new arrays; the inputs are left untouched."""
    op = make_op(PagedAttentionExtension, {"write_kv_cache": write_kv_cache})
    values = tuple(np.asarray(a) for a in arrays)
    key_cache, value_cache = values[3].copy(), values[4].copy()
    try:
        op.check_arity(len(values), PagedAttentionExtension.outputs)
        op.infer(*(TensorInfo.of(v) for v in values))
        return (*op.step(values, key_cache, value_cache), key_cache, value_cache)
    except IRError as e:
        raise e.add_context(layer=op.layer.ref) from None
