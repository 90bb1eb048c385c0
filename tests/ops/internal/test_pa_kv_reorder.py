"""PaKVReorder (domain `extension`). OpenVINO cannot read the op from a file (its CPU plugin does
not register it) and only OpenVINO GenAI's C++ pipeline builds it (its PaKVReorderFusion pass, which Python
cannot reach), so the judge is the page's pseudocode transcribed in page_pa_kv_reorder.py. Also:
the caches are written only when donated, and every refusal has its label."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import one_layer_ir
from page_pa_kv_reorder import pa_kv_reorder as page

import irscatter
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import call, make_op
from irscatter.ops.internal.pa_kv_reorder import PaKVReorder

NAMES = PaKVReorder.inputs
I32 = np.int32


def make(sequences, *, blocks=6, heads=2, block_size=4, key_size=3, value_size=5, dtype=np.float32, seed=0):
    """The six inputs. `sequences`: (its blocks, its moves as (source, destination) positions)."""
    rng = np.random.default_rng(seed)
    key = rng.standard_normal((blocks, heads, block_size, key_size)).astype(dtype)
    value = rng.standard_normal((blocks, heads, block_size, value_size)).astype(dtype)
    return [key, value, np.array([b for own, _ in sequences for b in own], I32),
            np.cumsum([0] + [len(own) for own, _ in sequences]).astype(I32),
            np.array([p for _, moves in sequences for move in moves for p in move], I32).reshape(-1),
            np.cumsum([0] + [len(moves) for _, moves in sequences]).astype(I32)]


def moved(arrays):
    """The caches after the moves (new arrays) and the status, through the op's own path."""
    op = make_op(PaKVReorder, {})
    op.infer(*(TensorInfo.of(a) for a in arrays))
    key, value = arrays[0].copy(), arrays[1].copy()
    op.move(tuple(arrays), key, value)
    return key, value


CASES = {
    "accepted-draft-tokens": [([2, 0], [(5, 3), (6, 4)])],  # tokens 5 and 6 kept at 3 and 4
    "across-blocks": [([2, 0, 5], [(9, 1), (1, 10), (4, 4)])],
    "a-token-moved-twice": [([1, 3], [(6, 2), (2, 7)])],  # 7 ends with what 6 held
    "two-moves-to-one-slot": [([1, 3], [(6, 2), (5, 2)])],  # the later wins
    "a-swap-in-three-moves": [([4], [(0, 3), (1, 0), (3, 1)])],
    "sequences": [([2, 0], [(5, 3)]), ([], []), ([4, 1], [(1, 6), (7, 0)]), ([3], [])],
    "no-moves": [([2, 0], [])],
    "no-sequences": [],
}


@pytest.mark.parametrize("name", CASES)
def test_the_page_s_moves(name):
    arrays = make(CASES[name])
    key, value = moved(arrays)
    want_key, want_value = page(*arrays)
    np.testing.assert_array_equal(key, want_key)
    np.testing.assert_array_equal(value, want_value)


def test_random_schedules_follow_the_page():
    rng = np.random.default_rng(7)
    for _ in range(40):
        sequences = []
        for owned in rng.integers(0, 4, rng.integers(1, 4)):
            own = [int(b) for b in rng.permutation(6)[:owned]]
            moves = [tuple(int(p) for p in rng.integers(0, 4 * owned, 2)) for _ in range(rng.integers(0, 6))] \
                if owned else []
            sequences.append((own, moves))
        arrays = make(sequences, seed=int(rng.integers(100)))
        for got, want in zip(moved(arrays), page(*arrays)):
            np.testing.assert_array_equal(got, want, err_msg=str(sequences))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_precision_caches(dtype):
    arrays = make(CASES["across-blocks"], dtype=dtype)
    for got, want in zip(moved(arrays), page(*arrays)):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))  # bits moved, NaNs included


def test_size_zero_dimensions():
    for options in ({"key_size": 0}, {"heads": 0}, {"blocks": 0}):
        arrays = make([([], [])], **options)
        key, value = moved(arrays)
        assert key.shape == arrays[0].shape and np.array_equal(value, arrays[1])


def test_non_finite_values_are_moved_as_they_are():
    arrays = make(CASES["accepted-draft-tokens"])
    arrays[0][0, 1, 1] = [np.nan, np.inf, -np.inf]  # position 5 of the sequence (block 0, slot 1)
    key, _ = moved(arrays)
    np.testing.assert_array_equal(key[2, 1, 3], [np.nan, np.inf, -np.inf])


def test_the_function_form_writes_no_input_and_returns_the_status():
    arrays = make(CASES["across-blocks"])
    kept = [a.copy() for a in arrays]
    status = call(PaKVReorder, arrays, {})
    assert status.dtype == np.uint8 and status.tolist() == [0]
    assert all(np.array_equal(a, b) for a, b in zip(arrays, kept))


def test_a_model_run_writes_the_caches_only_when_donated(tmp_path):
    arrays = make(CASES["across-blocks"])
    xml = one_layer_ir(tmp_path, "PaKVReorder", "extension", {}, list(zip(NAMES, arrays)), [((1,), np.uint8)])
    model = irscatter.read_model(xml)
    want_key, want_value = page(*arrays)
    feeds = dict(zip(NAMES, arrays))
    kept = arrays[0].copy()
    assert model.run(feeds)["out0"].tolist() == [0]
    np.testing.assert_array_equal(feeds["key_cache"], kept)
    model.run(feeds, donate=["key_cache", "value_cache"])
    np.testing.assert_array_equal(feeds["key_cache"], want_key)
    np.testing.assert_array_equal(feeds["value_cache"], want_value)


F32 = np.float32
REFUSED = [
    ("pakv-quantized", {0: np.zeros((6, 2, 4, 3), np.uint8), 1: np.zeros((6, 2, 4, 5), np.uint8)}),
    ("pakv-cache-type", {0: np.zeros((6, 2, 4, 3), np.int8), 1: np.zeros((6, 2, 4, 5), np.int8)}),
    ("pakv-cache-type", {0: np.zeros((6, 2, 4, 3), np.float64), 1: np.zeros((6, 2, 4, 5), np.float64)}),
    ("pakv-cache-type", {1: np.zeros((6, 2, 4, 5), np.float16)}),
    ("pakv-cache-layout", {0: np.zeros((6, 8, 3), F32)}),
    ("pakv-cache-layout", {1: np.zeros((6, 2, 5, 5), F32)}),
    ("pakv-cache-layout", {0: np.zeros((6, 2, 0, 3), F32), 1: np.zeros((6, 2, 0, 5), F32)}),
    ("pakv-sequences", {5: np.array([0, 1, 1], I32)}),
    ("pakv-sequences", {3: np.array([0, 4], I32)}),
    ("pakv-sequences", {5: np.array([2, 1], I32)}),
    ("pakv-updates", {4: np.array([5, 3, 6], I32)}),
    ("pakv-updates", {4: np.array([5, 3, 8, 4], I32)}),
    ("pakv-updates", {4: np.array([5, 3, -1, 4], I32)}),
    ("pakv-block-table", {2: np.array([2, 6], I32)}),
    ("index-type", {2: np.array([2, 0], np.int64)}),
    ("index-rank", {2: np.array([[2, 0]], I32)}),
]


@pytest.mark.parametrize(("label", "change"), REFUSED)
def test_refusals(label, change):
    arrays = make(CASES["accepted-draft-tokens"])
    arrays = [change.get(i, a) for i, a in enumerate(arrays)]
    with pytest.raises(irscatter.IRError) as caught:
        call(PaKVReorder, arrays, {})
    assert caught.value.label == label, str(caught.value)
