"""PagedScatterUpdate-1 (irscatter1): the seed's examples through IR files, both forms on
every claimed element type, padding and duplicate tokens, and checks of every constraint.
OpenVINO cross-checks the 4-D form: a paged write is a ScatterNDUpdate with index pairs
(k // block_size, k % block_size)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import oracles
import pytest
from helpers import one_layer_ir, run_ov, save_ov
from hypothesis import given, settings
from hypothesis import strategies as st

import irscatter
from irscatter.ops import paged_scatter_update

VALUE_DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.int16]
INDEX_DTYPES = [np.int16, np.int32, np.int64]


def run_ir(tmp_path, cache, index, src, dim="-2"):
    xml = one_layer_ir(tmp_path, "PagedScatterUpdate", "irscatter1", {"dim": dim},
                       [("cache", cache), ("index", index), ("src", src)], [(cache.shape, cache.dtype)])
    return irscatter.read_model(xml).run({"cache": cache, "index": index, "src": src})["out0"]


# --- the seed's two examples ------------------------------------------------------------------


def test_seed_2d_example(tmp_path):
    x = np.zeros((8, 3), np.int32)
    y = np.array([[1, 2], [4, 5]], np.int64)
    z = np.arange(1, 13, dtype=np.int32).reshape(4, 3)
    expected = np.array([[0, 0, 0], [1, 2, 3], [4, 5, 6], [0, 0, 0], [7, 8, 9], [10, 11, 12], [0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(run_ir(tmp_path, x, y, z), expected)


def test_seed_4d_example(tmp_path):
    x = np.zeros((2, 6, 1, 3), np.int32)
    y = np.array([[1, 8], [4, 10]], np.int64)
    z = np.arange(1, 13, dtype=np.int32).reshape(2, 2, 1, 3)
    expected = np.zeros((2, 6, 1, 3), np.int32)
    expected[0, 1, 0] = [1, 2, 3]
    expected[0, 4, 0] = [7, 8, 9]
    expected[1, 2, 0] = [4, 5, 6]
    expected[1, 4, 0] = [10, 11, 12]
    np.testing.assert_array_equal(run_ir(tmp_path, x, y, z), expected)


# --- semantics on every claimed type ------------------------------------------------------------


@pytest.mark.parametrize("dtype", VALUE_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("four_d", [False, True], ids=["2d", "4d"])
def test_types_and_forms_match_the_formula(tmp_path, dtype, index_dtype, four_d):
    rng = np.random.default_rng(7)
    blocks, block_size, d, b, s = 3, 4, 5, 2, 3
    slots = blocks * block_size
    index = rng.permutation(slots)[: b * s].reshape(b, s).astype(index_dtype)
    index[1, 2] = -1  # a padding token
    if four_d:
        cache = rng.normal(size=(blocks, block_size, 1, d)).astype(dtype)
        src = rng.normal(size=(b, s, 1, d)).astype(dtype)
    else:
        cache = rng.normal(size=(slots, d)).astype(dtype)
        src = rng.normal(size=(b * s, d)).astype(dtype)
    before = (cache.copy(), index.copy(), src.copy())
    got = run_ir(tmp_path, cache, index, src)
    assert got.dtype == cache.dtype
    np.testing.assert_array_equal(got, oracles.paged_scatter_update(cache, index, src))
    for a, b_ in zip((cache, index, src), before):
        np.testing.assert_array_equal(a, b_)  # inputs untouched


def test_duplicate_slots_last_token_wins():
    cache = np.zeros((4, 2), np.float32)
    index = np.array([[3, 1], [3, 3]], np.int32)
    src = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = paged_scatter_update(cache, index, src)
    np.testing.assert_array_equal(out[3], src[3])  # the last of the three writes to slot 3
    np.testing.assert_array_equal(out[1], src[1])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_writes_match_the_oracle(data):
    four_d = data.draw(st.booleans())
    blocks = data.draw(st.integers(1, 4))
    block_size = data.draw(st.integers(1, 5))
    d = data.draw(st.integers(1, 4))
    b, s = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    slots = blocks * block_size
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    index = rng.integers(-2, slots, size=(b, s)).astype(np.int64)  # duplicates and padding
    shape = (blocks, block_size, 1, d) if four_d else (slots, d)
    cache = rng.normal(size=shape).astype(np.float32)
    src = rng.normal(size=(b, s, 1, d) if four_d else (b * s, d)).astype(np.float32)
    np.testing.assert_array_equal(paged_scatter_update(cache, index, src), oracles.paged_scatter_update(cache, index, src))


# --- against OpenVINO: the same write as ScatterNDUpdate --------------------------------------


def test_4d_form_agrees_with_openvino_scatter_nd(tmp_path):
    ov = pytest.importorskip("openvino")
    import openvino.opset15 as o15

    rng = np.random.default_rng(11)
    blocks, block_size, b, s = 16, 8, 4, 16
    cache = rng.normal(size=(blocks, block_size, 1, 32)).astype(np.float32)
    index = rng.permutation(blocks * block_size)[: b * s].reshape(b, s).astype(np.int64)
    src = rng.normal(size=(b, s, 1, 32)).astype(np.float32)
    pairs = np.stack([index // block_size, index % block_size], axis=-1)
    c = o15.parameter(cache.shape, ov.Type.f32, name="cache")
    i = o15.parameter(pairs.shape, ov.Type.i64, name="pairs")
    u = o15.parameter(src.shape, ov.Type.f32, name="src")
    model = ov.Model([o15.result(o15.scatter_nd_update(c, i, u))], [c, i, u], "paged")
    (expected,) = run_ov(save_ov(model, tmp_path), {"cache": cache, "pairs": pairs, "src": src})
    np.testing.assert_array_equal(run_ir(tmp_path, cache, index, src), expected)


# --- constraints -----------------------------------------------------------------------------------


def _error(fn):
    with pytest.raises(irscatter.IRError) as e:
        fn()
    return e.value


@pytest.mark.parametrize(("cache", "index", "src", "label"), [
    (np.zeros((4, 2), np.float64), np.zeros((1, 1), np.int32), np.zeros((1, 2), np.float64), "cache-type"),
    (np.zeros((4, 2), np.float32), np.zeros((1, 1), np.uint8), np.zeros((1, 2), np.float32), "index-type"),
    (np.zeros((4, 2), np.float32), np.zeros((1, 1), np.int32), np.zeros((1, 2), np.float16), "src-type"),
    (np.zeros((4, 2), np.float32), np.zeros((1,), np.int32), np.zeros((1, 2), np.float32), "index-rank"),
    (np.zeros((4,), np.float32), np.zeros((1, 1), np.int32), np.zeros((1,), np.float32), "cache-rank"),
    (np.zeros((4, 2, 2), np.float32), np.zeros((1, 1), np.int32), np.zeros((1, 1, 2), np.float32), "cache-rank"),
    (np.zeros((1, 4, 2, 2, 2), np.float32), np.zeros((1, 1), np.int32), np.zeros((1, 1, 2), np.float32), "cache-rank"),
    (np.zeros((2, 4, 2, 3), np.float32), np.zeros((1, 1), np.int32), np.zeros((1, 1, 2, 3), np.float32), "cache-shape"),
    (np.zeros((4, 2), np.float32), np.zeros((2, 2), np.int32), np.zeros((3, 2), np.float32), "src-shape"),
    (np.zeros((2, 4, 1, 3), np.float32), np.zeros((2, 2), np.int32), np.zeros((2, 2, 1, 2), np.float32), "src-shape"),
    (np.zeros((0, 2), np.float32), np.zeros((1, 1), np.int32), np.zeros((1, 2), np.float32), "empty"),
])
def test_constraint_violations_are_labelled(cache, index, src, label):
    assert _error(lambda: paged_scatter_update(cache, index, src)).label == label


def test_dim_must_stay_minus_two(tmp_path):
    cache, index, src = np.zeros((4, 2), np.float32), np.zeros((1, 1), np.int32), np.zeros((1, 2), np.float32)
    err = _error(lambda: run_ir(tmp_path, cache, index, src, dim="0"))
    assert err.label == "dim" and "under_test" in str(err) and "PagedScatterUpdate-1" in str(err)


def test_more_than_int32_max_elements_is_refused_before_allocation():
    from irscatter.ir.element_types import ElementType
    from irscatter.ir.shapes import PartialShape
    from irscatter.ops.base import TensorInfo
    from irscatter.ops.functional import make_op
    from irscatter.ops.irscatter1.paged_scatter_update import PagedScatterUpdate

    op = make_op(PagedScatterUpdate, {})
    cache = TensorInfo(ElementType.f16, PartialShape.of((2**20, 2**11)))  # 2^31 elements
    index = TensorInfo(ElementType.i32, PartialShape.of((1, 1)))
    src = TensorInfo(ElementType.f16, PartialShape.of((1, 2**11)))
    assert _error(lambda: op.infer(cache, index, src)).label == "size-limit"


def test_index_past_the_cache_names_the_position(tmp_path):
    cache = np.zeros((2, 3, 1, 2), np.float32)
    index = np.array([[0, 6]], np.int32)
    src = np.zeros((1, 2, 1, 2), np.float32)
    err = _error(lambda: run_ir(tmp_path, cache, index, src))
    assert isinstance(err, irscatter.ExecutionError)
    assert "index 6 at position [0, 1]" in str(err) and "input 1" in str(err)
