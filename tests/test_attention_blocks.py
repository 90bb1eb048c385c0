"""ScaledDotProductAttention by blocks of query rows (ops/matrix/attention_blocks.py) gives the
bits of the whole-array arithmetic, for every kind of mask, and falls back to it where it would
not."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import sdpa_op

from irscatter.ops.common import products, threads
from irscatter.ops.matrix import attention_blocks


@pytest.fixture(params=["rows", "matrices"])
def small_blocks(monkeypatch, request):
    """Blocks, parts and several helpers on small operands: blocks of one quantum of rows, or
    (`matrices`) runs of two whole matrices a task, and a shorter run after them."""
    monkeypatch.setattr(threads, "SPLIT_WORK", 0)
    monkeypatch.setattr(threads, "CORES", 3)
    monkeypatch.setattr(threads, "_policy", "split")
    if request.param == "rows":
        monkeypatch.setattr(attention_blocks, "BLOCK_LOGITS", 1)
    else:  # every matrix one block; the runs' length as `_tasks` makes them for larger blocks
        monkeypatch.setattr(attention_blocks, "BLOCK_LOGITS", 1 << 40)
        monkeypatch.setattr(attention_blocks, "_tasks", lambda matrices, rows, source, blocks, parts:
                            [(m, min(m + 2, matrices), 0, rows) for m in range(0, matrices, 2)])
    # products this small all go to one kind of BLAS kernel, so the cuts need no least size
    monkeypatch.setattr(products, "LEAST_CUT_WORK", 0)


def _both(op, arrays, monkeypatch):
    """The op's output by blocks, then by the whole arithmetic."""
    taken = []
    usable = attention_blocks.usable
    monkeypatch.setattr(attention_blocks, "usable", lambda *a: taken.append(usable(*a)) or taken[-1])
    blocked = op.compute(*arrays)
    monkeypatch.setattr(attention_blocks, "usable", lambda *a: False)
    return taken, blocked, op.compute(*arrays)


MASKS = {
    "none": None,
    "boolean [L, S]": lambda g, b, L, S: g.random((L, S)) < 0.8,
    "boolean [N, 1, L, S] with a fully masked row": lambda g, b, L, S: np.concatenate(
        [np.zeros((*b[:-1], 1, 1, S), bool), g.random((*b[:-1], 1, L - 1, S)) < 0.7], axis=-2),
    "float [1, S]": lambda g, b, L, S: g.standard_normal((1, S)).astype(np.float32),
    "float [N, H, L, S]": lambda g, b, L, S: g.standard_normal((*b, L, S)).astype(np.float32),
    "scalar": lambda g, b, L, S: np.float32(0.25),
}


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize(("batch", "rows", "source"), [((2, 3), 150, 70), ((1, 2), 97, 33), ((3,), 40, 64),
                                                       ((1, 1), 200, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocks_give_the_whole_arithmetics_bits(small_blocks, monkeypatch, mask, batch, rows, source, dtype):
    generator = np.random.default_rng(rows + source)
    q = generator.standard_normal((*batch, rows, 16)).astype(dtype) * 2
    k = generator.standard_normal((*batch, source, 16)).astype(dtype)
    v = generator.standard_normal((*batch, source, 24)).astype(dtype)
    arrays = [q, k, v]
    if MASKS[mask] is not None:
        m = np.asarray(MASKS[mask](generator, batch, rows, source))
        arrays.append(m if m.dtype == bool else m.astype(dtype))
    before = [a.copy() for a in arrays]
    taken, blocked, whole = _both(sdpa_op(False, len(arrays)), arrays, monkeypatch)
    assert taken == [True]
    assert blocked.dtype == whole.dtype and blocked.shape == whole.shape
    assert np.array_equal(blocked, whole, equal_nan=True)
    assert all(np.array_equal(a, b) for a, b in zip(arrays, before))


@pytest.mark.parametrize("rows", [150, 7])
def test_causal_blocks_give_the_whole_arithmetics_bits(small_blocks, monkeypatch, rows):
    generator = np.random.default_rng(3)
    q, k, v = (generator.standard_normal((2, 2, n, 8)).astype(np.float32) for n in (rows, 120, 120))
    taken, blocked, whole = _both(sdpa_op(True, 3), [q, k, v], monkeypatch)
    assert taken == [True] and np.array_equal(blocked, whole, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_query_key_and_value_cut_from_one_projection_take_the_blocks(small_blocks, monkeypatch, dtype):
    # What a converted transformer feeds: [1, L, 3, H, E] transposed to [3, 1, H, L, E] and split.
    projection = np.random.default_rng(5).standard_normal((1, 130, 3, 2, 16)).astype(dtype)
    q, k, v = projection.transpose(2, 0, 3, 1, 4)
    taken, blocked, whole = _both(sdpa_op(False, 3), [q, k, v], monkeypatch)
    assert taken == [True] and np.array_equal(blocked, whole)
    shifted = np.random.default_rng(6).standard_normal((2, 140, 8)).astype(dtype)
    assert not attention_blocks.usable(shifted[:, :100], shifted[:, 30:130], shifted[:, 30:130], None)  # a row meets


def test_where_blocks_would_change_bits_the_whole_arithmetic_runs(small_blocks, monkeypatch):
    generator = np.random.default_rng(4)
    q = generator.standard_normal((2, 100, 8)).astype(np.float32)
    k = generator.standard_normal((1, 100, 8)).astype(np.float32)  # broadcast batch
    assert not attention_blocks.usable(q, k, k, None)
    assert not attention_blocks.usable(q, q, q, None)  # query is key
    assert not attention_blocks.usable(q, q.copy(), q.copy(), np.zeros((3, 2, 100, 100), np.float32))  # adds a batch
    assert not attention_blocks.usable(q, q.copy(), q.copy(), np.zeros((3,), np.float32))  # a 1-D mask is refused
    assert not attention_blocks.usable(q.astype(np.float16), q.astype(np.float16), q.astype(np.float16), None)
    monkeypatch.setattr(threads, "_policy", "blas")
    assert not attention_blocks.usable(q, q.copy(), q.copy(), None)


def test_tasks_are_row_blocks_or_runs_of_whole_matrices(monkeypatch):
    monkeypatch.setattr(attention_blocks, "BLOCK_LOGITS", 2 * 49 * 49 + 10)
    assert attention_blocks._tasks(5, 49, 49, [(0, 49)], 1) == [(0, 2, 0, 49), (2, 4, 0, 49), (4, 5, 0, 49)]
    assert attention_blocks._tasks(12, 8, 8, [(0, 8)], 2) == [(0, 6, 0, 8), (6, 12, 0, 8)]  # a part's share at most
    assert attention_blocks._tasks(2, 300, 49, [(0, 144), (144, 300)], 2) == [
        (0, 1, 0, 144), (0, 1, 144, 300), (1, 2, 0, 144), (1, 2, 144, 300)]
    monkeypatch.setattr(attention_blocks, "BLOCK_LOGITS", 100)  # a matrix larger than a block: one a task
    assert attention_blocks._tasks(3, 49, 49, [(0, 49)], 1) == [(0, 1, 0, 49), (1, 2, 0, 49), (2, 3, 0, 49)]
