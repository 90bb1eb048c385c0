"""PagedAttentionExtension (domain `extension`): the kernel against the literal oracle on every
feature it computes, its cache write against the seeds' PagedScatterUpdate, the caches a model
run updates (donated) or leaves alone, and every refusal with its label. The comparison with
OpenVINO's CPU plugin on a model OpenVINO's own transformation wrote is in
test_paged_attention_openvino.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import one_layer_ir
from oracles.internal import paged_attention as oracle

import irscatter
from irscatter.ops import paged_attention, paged_scatter_update
from irscatter.ops.internal.paged_attention_extension import INPUTS

I32 = np.int32


def step_inputs(sequences, *, heads=4, kv_heads=2, head_size=8, value_size=None, block_size=4, blocks=8,
                cache_dtype=np.float32, seed=0, **options):
    """The 28 inputs of one step. `sequences`: (past, new, block table) each; `options` replace
    the defaults of the scalar and optional inputs by name."""
    rng = np.random.default_rng(seed)
    value_size = value_size or head_size
    tokens = sum(new for _, new, _ in sequences)
    empty_i32 = np.zeros(0, I32)
    inputs = {
        "query": rng.standard_normal((tokens, heads * head_size)).astype(np.float32),
        "key": rng.standard_normal((tokens, kv_heads * head_size)).astype(np.float32),
        "value": rng.standard_normal((tokens, kv_heads * value_size)).astype(np.float32),
        "key_cache": rng.standard_normal((blocks, kv_heads, block_size, head_size)).astype(cache_dtype),
        "value_cache": rng.standard_normal((blocks, kv_heads, block_size, value_size)).astype(cache_dtype),
        "past_lens": np.array([p for p, _, _ in sequences], I32),
        "subsequence_begins": np.cumsum([0] + [n for _, n, _ in sequences]).astype(I32),
        "block_indices": np.array([b for _, _, t in sequences for b in t], I32),
        "block_indices_begins": np.cumsum([0] + [len(t) for _, _, t in sequences]).astype(I32),
        "scale": np.array(1 / np.sqrt(head_size), np.float32), "sliding_window": np.array(0, I32),
        "alibi_slopes": np.zeros(0, np.float32), "max_context_len": np.array(0, I32),
        "score_aggregation_window": empty_i32, "rotated_block_indices": empty_i32,
        "rotation_deltas": np.zeros((0, 1), I32), "rotation_trig_lut": np.zeros((0, head_size), np.float32),
        "xattention_threshold": np.zeros(0, np.float32), "xattention_block_size": np.array(0, I32),
        "xattention_stride": np.array(0, I32), "sinks": np.zeros((0, 0, 0, 0), np.float32),
        "adaptive_rkv_start_size": np.array(0, I32), "adaptive_rkv_evictable_sizes": empty_i32,
        "adaptive_rkv_diversity_block_set_indices": empty_i32,
        "adaptive_rkv_diversity_block_set_indices_begins": empty_i32, "token_type_ids": empty_i32,
        "qq_bias": np.zeros(0, np.uint8), "qq_bias_begins": empty_i32,
    }
    inputs.update({name: np.asarray(value, inputs[name].dtype) for name, value in options.items()})
    return inputs


def run(inputs):
    return paged_attention(*(inputs[name] for name in INPUTS))


def expected(inputs):
    sinks = inputs["sinks"]
    return oracle(*(inputs[name] for name in INPUTS[:17]), sinks=sinks if sinks.size else None)


MIXED = [(0, 6, [5, 2]), (3, 1, [7]), (9, 2, [1, 0, 6])]  # prefill, decode, a short chunk: tables not the identity
LUT = np.concatenate([np.cos(np.arange(6)[:, None] * [0.1, 0.2, 0.3, 0.4]),
                      np.sin(np.arange(6)[:, None] * [0.1, 0.2, 0.3, 0.4])], axis=1).astype(np.float32)

CASES = {
    "gqa-mixed": (MIXED, {}),
    "mha": (MIXED, {"kv_heads": 4}),
    "mqa-value-size": (MIXED, {"kv_heads": 1, "value_size": 5}),
    "prefill-two": ([(0, 7, [3, 6]), (0, 3, [0])], {}),
    "decode-block-edge": ([(4, 1, [2, 5]), (7, 1, [4, 1]), (0, 1, [3])], {}),
    "scale-zero-is-default": (MIXED, {"scale": 0.0}),
    "scale": (MIXED, {"scale": 0.7}),
    "sliding-window": (MIXED, {"sliding_window": 3}),
    "max-context-len": (MIXED, {"max_context_len": 4}),
    "alibi": (MIXED, {"alibi_slopes": [0.5, 0.25, 0.125, 0.0625]}),
    "sinks": (MIXED, {"sinks": np.array([0.3, -1.0, 2.0, 0.0]).reshape(1, 4, 1, 1)}),
    "score-window-scalar": (MIXED, {"score_aggregation_window": 2}),
    "score-window-all": (MIXED, {"score_aggregation_window": -1}),
    "score-window-off": (MIXED, {"score_aggregation_window": 0}),
    "score-window-each": (MIXED, {"score_aggregation_window": [3, 0, -1]}),
    "evicted-block": ([(8, 1, [-1, 4, 6])], {}),
    "a-sequence-with-nothing-new": ([(3, 0, [1]), (0, 0, []), (2, 2, [6])], {}),
    "rotation-per-block": (MIXED, {"rotated_block_indices": [5, 1], "rotation_deltas": [[2], [4]],
                                   "rotation_trig_lut": LUT}),
    "rotation-per-slot": (MIXED, {"rotated_block_indices": [0], "rotation_deltas": [[1, 3, 5, 0]],
                                  "rotation_trig_lut": LUT}),
    "rotation-1d": (MIXED, {"rotated_block_indices": [1], "rotation_deltas": [3], "rotation_trig_lut": LUT}),
}


@pytest.mark.parametrize("name", CASES)
def test_a_step_matches_the_oracle(name):
    sequences, options = CASES[name]
    inputs = step_inputs(sequences, **options)
    before = {k: v.copy() for k, v in inputs.items()}
    attention, scores, diversity, key_cache, value_cache = run(inputs)
    want_attention, want_scores, want_keys, want_values = expected(inputs)
    np.testing.assert_allclose(attention, want_attention, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(scores, want_scores, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(key_cache, want_keys, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(value_cache, want_values, rtol=0, atol=0)
    assert diversity.shape == (0,) and attention.dtype == scores.dtype == np.float32
    assert all(np.array_equal(before[k], inputs[k]) for k in inputs)  # the function form writes no input


def test_each_feature_changes_the_answer():
    """The cases above would pass on a kernel that ignored an input whose effect is nil: each
    feature must move the attention or the cache away from the plain step's."""
    plain = run(step_inputs(MIXED))
    for name in ("scale", "sliding-window", "max-context-len", "alibi", "sinks", "rotation-per-block",
                 "rotation-per-slot", "rotation-1d"):
        sequences, options = CASES[name]
        changed = run(step_inputs(sequences, **options))
        assert not np.allclose(changed[0], plain[0]), name
    assert np.allclose(run(step_inputs(MIXED, scale=0.0))[0], plain[0])  # 0 is 1/sqrt(8), the plain scale


def test_a_half_precision_cache_stores_rounded_keys():
    inputs = step_inputs(MIXED, cache_dtype=np.float16)
    attention, _, _, key_cache, _ = run(inputs)
    assert key_cache.dtype == np.float16
    rounded = dict(inputs, key=inputs["key"].astype(np.float16).astype(np.float32),
                   value=inputs["value"].astype(np.float16).astype(np.float32))
    np.testing.assert_allclose(attention, expected(rounded)[0], rtol=1e-4, atol=1e-5)


def test_a_bf16_step_computes_in_f32_and_rounds_once():
    inputs = step_inputs(MIXED, cache_dtype=ml_dtypes.bfloat16)
    for name in ("query", "key", "value"):
        inputs[name] = inputs[name].astype(ml_dtypes.bfloat16)
    attention = run(inputs)[0]
    assert attention.dtype == ml_dtypes.bfloat16
    wide = {k: (v.astype(np.float32) if v.dtype == ml_dtypes.bfloat16 else v) for k, v in inputs.items()}
    np.testing.assert_allclose(attention.astype(np.float32), expected(wide)[0], rtol=2e-2, atol=2e-2)


# --- the write, against the seeds' paged scatter_update --------------------------------------

WRITES = {
    "prefill-across-blocks": [(0, 9, [6, 1, 3])],
    "decode-into-a-new-block": [(8, 1, [2, 7, 0])],
    "continuous-batch": MIXED,
    "chunk-after-a-past": [(5, 6, [4, 0, 7])],
}


@pytest.mark.parametrize("name", WRITES)
def test_the_cache_write_is_paged_scatter_update(name):
    """PagedScatterUpdate's 4-D form writes token rows into [blocks, block_size, 1, d] through
    slot ids block * block_size + offset: run per kv head, it must leave each head's cache as
    PagedAttentionExtension leaves it (the value cache also has the CPU plugin's zeroed tail)."""
    sequences = WRITES[name]
    inputs = step_inputs(sequences, block_size=4)
    _, _, _, key_cache, value_cache = run(inputs)
    slots, tails = [], []
    for past, new, table in sequences:
        positions = np.arange(past, past + new)
        slots += [table[p // 4] * 4 + p % 4 for p in positions]
        total = past + new
        if new > 1 and total % 4:
            tails.append((table[total // 4], total % 4))
    index = np.array([slots], np.int64)  # [1, tokens]
    for cache_name, rows, updated in (("key_cache", "key", key_cache), ("value_cache", "value", value_cache)):
        cache = inputs[cache_name]
        size = cache.shape[3]
        for h in range(cache.shape[1]):
            src = inputs[rows][:, h * size:(h + 1) * size].reshape(1, -1, 1, size)
            want = paged_scatter_update(np.ascontiguousarray(cache[:, h, :, None, :]), index, src)[:, :, 0, :]
            if cache_name == "value_cache":
                for block, used in tails:
                    want[block, used:] = 0
            np.testing.assert_array_equal(updated[:, h], want, err_msg=f"{cache_name} head {h}")


# --- a model run: donated caches are updated in place, others never written ------------------


def _ir(tmp_path, inputs):
    tokens = inputs["query"].shape[0]
    total = int(inputs["past_lens"].sum()) + tokens
    features = inputs["query"].shape[1] // inputs["key_cache"].shape[3] * inputs["value_cache"].shape[3]
    outputs = [((tokens, features), np.float32), ((total,), np.float32), ((0,), np.float32)]
    xml = one_layer_ir(tmp_path, "PagedAttentionExtension", "extension", {"write_kv_cache": "true"},
                       [(name, inputs[name]) for name in INPUTS], outputs)
    return irscatter.read_model(xml)


def test_a_model_run_updates_donated_caches_and_no_other(tmp_path):
    inputs = step_inputs(MIXED)
    model = _ir(tmp_path, inputs)
    attention, scores, _, key_cache, value_cache = run(inputs)
    kept = {k: v.copy() for k, v in inputs.items()}
    out = model.run(inputs)
    np.testing.assert_array_equal(out["out0"], attention)
    np.testing.assert_array_equal(out["out1"], scores)
    assert all(np.array_equal(kept[k], inputs[k]) for k in inputs)  # nothing donated: nothing written
    out = model.run(inputs, donate=["key_cache", "value_cache"])
    np.testing.assert_array_equal(inputs["key_cache"], key_cache)  # the caller's arrays hold the step
    np.testing.assert_array_equal(inputs["value_cache"], value_cache)
    np.testing.assert_array_equal(out["out0"], attention)
    assert np.array_equal(inputs["query"], kept["query"])


def test_a_read_only_donated_cache_is_not_written(tmp_path):
    inputs = step_inputs(MIXED)
    model = _ir(tmp_path, inputs)
    inputs["key_cache"].flags.writeable = False
    kept = inputs["key_cache"].copy()
    out = model.run(inputs, donate=["key_cache", "value_cache"])
    np.testing.assert_array_equal(inputs["key_cache"], kept)
    np.testing.assert_array_equal(out["out0"], run(inputs)[0])


def test_a_watched_run_updates_donated_caches_too(tmp_path):
    inputs = step_inputs(MIXED)
    model = _ir(tmp_path, inputs)
    _, _, _, key_cache, _ = run(inputs)
    seen = []
    model.run(inputs, donate="key_cache", hook=lambda layer, ins, outs: seen.append(layer.type))
    np.testing.assert_array_equal(inputs["key_cache"], key_cache)
    assert "PagedAttentionExtension" in seen


def test_the_layer_is_named_with_its_domain_in_messages(tmp_path):
    inputs = step_inputs([(0, 3, [9])], blocks=8)  # block 9 of 8
    with pytest.raises(irscatter.ExecutionError) as caught:
        _ir(tmp_path, inputs).run(inputs)
    assert '"under_test" (PagedAttentionExtension, extension) input 7' in str(caught.value)
    assert caught.value.label == "pa-block-table"


# --- refusals ---------------------------------------------------------------------------------

REFUSED = [
    ("pa-input-rank", {"sliding_window": np.array([0], I32)}),
    ("pa-input-type", {"past_lens": np.array([0], np.int64)}),
    ("pa-input-type", {"query": np.zeros((3, 32), np.int32)}),
    ("pa-features", {"query": np.zeros((3, 30), np.float32)}),
    ("pa-features", {"alibi_slopes": np.zeros(3, np.float32)}),
    ("pa-cache-layout", {"key_cache": np.zeros((8, 2, 4, 8), np.uint8)}),
    ("pa-cache-layout", {"key_cache": np.zeros((8, 2, 32), np.float32)}),
    ("pa-cache-layout", {"value_cache": np.zeros((8, 2, 5, 8), np.float32)}),
    ("pa-sequences", {"subsequence_begins": np.array([0, 2], I32)}),
    ("pa-sequences", {"past_lens": np.array([-1], I32)}),
    ("pa-block-table", {"block_indices": np.zeros(0, I32), "block_indices_begins": np.array([0, 0], I32)}),
    ("pa-block-table", {"block_indices": np.array([-1], I32)}),
    ("pa-unsupported", {"qq_bias": np.ones(3, np.uint8)}),
    ("pa-unsupported", {"token_type_ids": np.ones(3, I32)}),
    ("pa-unsupported", {"adaptive_rkv_evictable_sizes": np.array([4], I32)}),
    ("pa-unsupported", {"xattention_threshold": np.array([0.9], np.float32), "xattention_block_size": np.array(2, I32),
                        "xattention_stride": np.array(1, I32)}),
    ("pa-rotation", {"rotated_block_indices": np.array([0], I32), "rotation_deltas": np.array([[0]], I32),
                     "rotation_trig_lut": np.ones((2, 7), np.float32)}),
    ("pa-rotation", {"rotated_block_indices": np.array([0], I32), "rotation_deltas": np.array([[0, 1]], I32),
                     "rotation_trig_lut": LUT}),
    ("pa-window", {"score_aggregation_window": np.array([1, 2], I32)}),
]


@pytest.mark.parametrize("label, changes", REFUSED)
def test_what_the_op_cannot_compute_is_refused_with_its_label(label, changes):
    inputs = step_inputs([(0, 3, [4])])
    inputs.update(changes)
    with pytest.raises(irscatter.IRError) as caught:
        run(inputs)
    assert caught.value.label == label, str(caught.value)
    assert "PagedAttentionExtension" in str(caught.value)


def test_xattention_that_would_not_be_active_leaves_attention_dense():
    """The op turns xattention on for one sequence's prefill only: a decode step computes as without it."""
    inputs = step_inputs([(5, 1, [4, 2])])
    dense = run(inputs)[0]
    inputs.update(xattention_threshold=np.array([0.9], np.float32), xattention_block_size=np.array(2, I32),
                  xattention_stride=np.array(1, I32))
    np.testing.assert_array_equal(run(inputs)[0], dense)


def test_write_kv_cache_false_is_refused():
    inputs = step_inputs([(0, 3, [4])])
    with pytest.raises(irscatter.IRError) as caught:
        paged_attention(*(inputs[name] for name in INPUTS), write_kv_cache=False)
    assert caught.value.label == "pa-unsupported" and "attribute write_kv_cache" in str(caught.value)


def test_the_page_s_25_inputs_are_enough():
    inputs = step_inputs(MIXED)
    full = run(inputs)
    short = paged_attention(*(inputs[name] for name in INPUTS[:25]))
    for a, b in zip(full, short):
        np.testing.assert_array_equal(a, b)
