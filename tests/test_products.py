"""Matrix products under the thread policy (`ops/common/products.py`): whatever the policy and
however a product is cut (by batch matrices, by blocks of rows or columns, or not at all), the
result has the bits of np.matmul on one BLAS thread (`split`, `one`) or of np.matmul itself
(`blas`), and with a bias, those plus the bias; a batch times one matrix has, under `split` and
`one`, the bits of one product of all its rows."""

import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from irscatter.ops.common import products, threads

SHAPES = [
    ((2, 3, 40, 24), (2, 3, 24, 30)),  # cut by batch matrices
    ((3, 1, 40, 24), (1, 4, 24, 30)),  # broadcast batches
    ((1, 5, 40, 24), (24, 30)),  # a batch times one matrix: one product of all the batch's rows
    ((2, 3, 40, 24), (1, 1, 24, 30)),
    ((3, 40, 24), (1, 1, 24, 30)),  # (the matrix's batch axes of size 1 lengthen the output's)
    ((4, 7, 24), (24,)),
    ((3, 0, 24), (24, 30)),  # no rows
    ((3, 5, 0), (0, 30)),  # nothing to sum: zeros
    ((1, 400, 64), (64, 300)),  # one matrix: cut by blocks of rows (each a call above BLAS's small kernels)
    ((397, 64), (64, 301)),
    ((16, 128), (128, 4099)),  # few rows, many columns: cut by blocks of columns where the BLAS keeps them
    ((200, 64), (64, 300)),  # rows up to COLUMN_CUT_ROWS: cut by columns however few
    ((1, 1, 64), (64, 300)),  # one row: not cut
    ((1, 1, 96), (96, 320)),  # one row: its transposed weight cut by blocks of weight rows
    ((1, 96), (96, 1000)),  # (weight rows that no block's size divides: the remainder in the last)
    ((96,), (96, 256)),
    ((64,), (2, 64, 50)),  # 1-D operands
    ((2, 150, 64), (64,)),
]


def _reference(a, b, policy):
    if policy == "blas":
        return np.matmul(a, b)
    with threadpool_limits(1, "blas"):
        if a.ndim > 2 and math.prod(a.shape[:-2]) > 1 and math.prod(b.shape[:-2]) == 1:
            matrix = b.reshape(b.shape[-2], b.shape[-1]) if b.ndim > 1 else b[:, None]
            batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            rows = np.matmul(a.reshape(-1, a.shape[-1]) if a.size else np.zeros((math.prod(a.shape[:-1]), a.shape[-1]), a.dtype), matrix)
            out = rows.reshape(*batch, a.shape[-2], matrix.shape[-1])
            return out[..., 0] if b.ndim == 1 else out
        return np.matmul(a, b)


@pytest.fixture
def every_product_split(monkeypatch):
    monkeypatch.setattr(threads, "SPLIT_WORK", 0)
    monkeypatch.setattr(products, "VECTOR_WORK", 0)
    monkeypatch.setattr(threads, "CORES", 3)


@pytest.mark.parametrize("policy", threads.POLICIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_keep_np_matmul_bits_under_every_policy(every_product_split, monkeypatch, policy, dtype):
    monkeypatch.setattr(threads, "_policy", policy)
    generator = np.random.default_rng(5)
    for a_shape, b_shape in SHAPES:
        a = generator.standard_normal(a_shape).astype(dtype)
        b = generator.standard_normal(b_shape).astype(dtype)
        before = a.copy(), b.copy()
        # and a transposed view, as MatMul's transpose_b and attention's key^T hand it over
        for right in (b, np.swapaxes(np.swapaxes(b, -1, -2).copy(), -1, -2) if b.ndim > 1 else b):
            got = products.matmul(a, right)
            expected = _reference(a, right, policy)
            assert got.dtype == expected.dtype and got.shape == expected.shape, (a_shape, b_shape)
            assert np.array_equal(got, expected), (a_shape, b_shape)
            if right.ndim >= 2:  # a bias of the columns, added by each part to its block
                bias = generator.standard_normal(right.shape[-1]).astype(dtype)
                biased = products.matmul(a, right, bias)
                assert biased.shape == expected.shape and biased.tobytes() == (expected + bias).tobytes(), (a_shape, b_shape)
        assert np.array_equal(a, before[0]) and np.array_equal(b, before[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_operands_cut_from_one_buffer_keep_their_bits(every_product_split, monkeypatch, dtype):
    """A query and a key split from one projection share a buffer at other offsets (their rows
    are cut); an array times its own transpose is not cut."""
    monkeypatch.setattr(threads, "_policy", "split")
    projection = np.random.default_rng(8).standard_normal((150, 2, 32)).astype(dtype)
    q, k = projection[:, 0], projection[:, 1]
    assert not products.rows_may_meet(q, k.T) and products.rows_may_meet(q, q.T)
    for a, b in ((q, k.T), (q, q.T)):
        assert np.array_equal(products.matmul(a, b), _reference(a, b, "split"))


def test_independent_products_keep_their_bits(every_product_split, monkeypatch):
    """GroupedMatMul's groups, uneven and one of them empty, each written into its own block."""
    monkeypatch.setattr(threads, "_policy", "split")
    generator = np.random.default_rng(6)
    a = generator.standard_normal((120, 32)).astype(np.float32)
    b = generator.standard_normal((4, 32, 20)).astype(np.float32)
    bounds = [(0, 70), (70, 70), (70, 100), (100, 120)]
    out = np.zeros((120, 20), np.float32)
    products.matmul_each([(a[lo:hi], b[g], out[lo:hi]) for g, (lo, hi) in enumerate(bounds)])
    with threadpool_limits(1, "blas"):
        expected = np.concatenate([a[lo:hi] @ b[g] for g, (lo, hi) in enumerate(bounds)])
    assert np.array_equal(out, expected)


def test_rows_are_cut_at_multiples_of_the_quantum_with_the_remainder_last():
    for q in products.QUANTA:
        for total, count in [(2 * q + 5, 2), (197, 2), (128, 2), (10 * q + 1, 3), (2 * q, 8)]:
            blocks = products.row_blocks(total, count, q)
            assert blocks[0][0] == 0 and blocks[-1][1] == total and len(blocks) <= count
            assert all(lo % q == 0 and hi - lo >= q for lo, hi in blocks)
            assert all(hi == lo2 for (_, hi), (lo2, _) in zip(blocks, blocks[1:]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_cuts_keep_the_bits_of_products_the_probe_did_not_try(dtype):
    """Whatever quantum this process's BLAS got, the row cuts keep the whole product's bits on
    row counts and widths the probe did not try, b in either layout."""
    with threadpool_limits(1, "blas"):
        if not products.quantum(np.dtype(dtype)):
            pytest.skip("this BLAS keeps no cut's bits: rows are not cut")
        generator = np.random.default_rng(9)
        cut_any = False
        for rows, inner, columns in [(400, 96, 77), (333, 64, 300), (161, 160, 129), (90, 64, 300)]:
            a = generator.standard_normal((rows, inner)).astype(dtype)
            for b in (generator.standard_normal((inner, columns)), generator.standard_normal((columns, inner)).T):
                b = b.astype(dtype)
                whole = a @ b
                for count in (2, 3):
                    blocks = products.row_cuts(rows, inner * columns, count, np.dtype(dtype))
                    assert blocks[0][0] == 0 and blocks[-1][1] == rows and len(blocks) <= count
                    assert all((hi - lo) * inner * columns >= products.LEAST_CUT_WORK for lo, hi in blocks[:-1])
                    cut_any |= len(blocks) > 1
                    cut = np.empty_like(whole)
                    for lo, hi in blocks:
                        np.matmul(a[lo:hi], b, out=cut[lo:hi])
                    assert np.array_equal(cut, whole), (rows, inner, columns, blocks)
        assert cut_any


def test_column_cuts_keep_the_bits_of_products_the_probe_did_not_try():
    """Whatever column quantum this process's BLAS got for f32 (none for f64), the column cuts
    keep the whole product's bits on row counts, depths and widths the probe did not try, b in
    either layout, each block written into its columns of the output."""
    assert products.column_quantum(np.dtype(np.float64)) == 0
    with threadpool_limits(1, "blas"):
        if not products.column_quantum(np.dtype(np.float32)):
            pytest.skip("this BLAS keeps no column cut's bits: columns are not cut")
        generator = np.random.default_rng(10)
        cut_any = False
        for rows, inner, columns in [(3, 700, 2999), (64, 896, 4864), (117, 200, 1003), (40, 33, 5000),
                                     (197, 1536, 384), (256, 96, 200)]:
            a = generator.standard_normal((rows, inner)).astype(np.float32)
            for b in (generator.standard_normal((inner, columns)), generator.standard_normal((columns, inner)).T):
                b = b.astype(np.float32)
                whole = a @ b
                for count in (2, 3):
                    blocks = products.column_cuts(columns, rows * inner, count, np.dtype(np.float32))
                    assert blocks[0][0] == 0 and blocks[-1][1] == columns and len(blocks) <= count
                    assert all((hi - lo) * rows * inner >= products.LEAST_CUT_WORK for lo, hi in blocks) or len(blocks) == 1
                    cut_any |= len(blocks) > 1
                    cut = np.empty_like(whole)
                    for lo, hi in blocks:
                        np.matmul(a, b[:, lo:hi], out=cut[:, lo:hi])
                    assert np.array_equal(cut, whole), (rows, inner, columns, blocks)
        assert cut_any


@pytest.mark.parametrize("rows, columns, by", [(197, 384, "columns"), (16, 4099, "columns"), (400, 300, "rows")])
def test_few_rows_are_cut_through_the_columns_and_many_through_the_rows(rows, columns, by):
    """Up to COLUMN_CUT_ROWS rows a split product keeps its rows whole and cuts its columns (where
    this BLAS keeps their bits); beyond, and where the columns are fewer than twice the rows, it
    cuts its rows."""
    with threadpool_limits(1, "blas"):
        if not products.column_quantum(np.dtype(np.float32)) or not products.quantum(np.dtype(np.float32)):
            pytest.skip("this BLAS keeps no cut's bits along one of the two axes")
        inner = 384
        a = np.zeros((1, rows, inner), np.float32)
        b = np.zeros((1, inner, columns), np.float32)
        parts = products._parts(a, b, np.empty((1, rows, columns), np.float32), 2)
    assert len(parts) == 2
    blocks = [block for part in parts for block in part]
    whole_rows = all(x.shape[-2] == rows for x, _, _, _ in blocks)
    whole_columns = all(y.shape[-1] == columns for _, y, _, _ in blocks)
    assert (whole_rows, whole_columns) == ((True, False) if by == "columns" else (False, True))



def _turning_here() -> bool:
    """Whether this process's BLAS turns products (its probe's answer, asked as a split asks it)."""
    with threads.one_blas_thread(1 << 40), threadpool_limits(1, "blas"):
        return products._turning_keeps_bits()


@pytest.mark.parametrize("rows, inner, columns", [(2, 1024, 2100), (16, 896, 4864), (49, 768, 3072),
                                                  (64, 4864, 896), (100, 384, 700), (32, 896, 20000),
                                                  (64, 896, 20000)])
def test_turned_products_keep_the_bits_of_products_as_written(monkeypatch, rows, inner, columns):
    """Few rows times a transposed weight, split as the thread policy splits it, give the same
    bits turned (the weight's rows times the rows' transpose) as written, bias included, on
    shapes the probe did not try; many columns with more than TURN_ANY_ROWS rows are not turned."""
    if not _turning_here():
        pytest.skip("this BLAS's products are not turned")
    monkeypatch.setattr(threads, "_policy", "split")
    monkeypatch.setattr(threads, "CORES", 2)
    generator = np.random.default_rng(13)
    a = generator.standard_normal((1, rows, inner)).astype(np.float32)
    b = generator.standard_normal((columns, inner)).astype(np.float32).T
    bias = generator.standard_normal(columns).astype(np.float32)
    calls = []
    monkeypatch.setattr(products, "product", lambda x, y, out=None, made=products.product: calls.append(
        (x.shape, y.shape)) or made(x, y, out))
    answers = {}
    for turning in (False, True):
        monkeypatch.setattr(products, "_turning", [turning])
        calls.clear()
        answers[turning] = products.matmul(a, b, bias)
        turned = [x[-1] == inner and y[-1] == rows for x, y in calls]
        expected = turning and (rows <= products.TURN_ANY_ROWS or columns // 2 <= products.TURN_COLUMNS)
        assert len(calls) == 2 and all(t == expected for t in turned), calls
    assert answers[True].tobytes() == answers[False].tobytes()
    np.testing.assert_allclose(answers[True][0], a[0] @ b + bias, rtol=1e-4, atol=1e-3)


def test_what_is_turned(monkeypatch):
    monkeypatch.setattr(products, "_turning", [True])
    weight = np.zeros((3000, 1024), np.float32)
    rows = np.zeros((1, 16, 1024), np.float32)
    assert products._turned(rows, weight.T) is not None
    assert products._turned(rows[0], weight.T[None]) is not None  # leading axes of size 1 on either side
    refused = {
        "one row": (rows[:, :1], weight.T),
        "many rows": (np.zeros((products.TURN_ROWS + 1, 1024), np.float32), weight.T),
        "f64": (rows.astype(np.float64), weight.T.astype(np.float64)),
        "a weight not transposed": (rows, np.zeros((1024, 3000), np.float32)),
        "rows not C-contiguous": (np.zeros((1024, 16), np.float32).T, weight.T),
        "a batch": (np.zeros((2, 16, 1024), np.float32), weight.T),
        "below BLAS's small kernels": (rows[..., :64], weight[:32, :64].T),
        "rows of the weight itself": (weight[:16], weight.T),
    }
    for why, (a, b) in refused.items():
        assert products._turned(a, b) is None, why
    monkeypatch.setattr(products, "_turning", [False])
    assert products._turned(rows, weight.T) is None


def test_other_blas_kernels_and_a_probe_that_differs_turn_nothing(monkeypatch):
    from irscatter.ops.common import probe_cache

    monkeypatch.setattr(probe_cache, "_answers", {})  # (no answer kept from an earlier probe)
    monkeypatch.setattr(products, "_turning", [])
    monkeypatch.setattr(threads, "blas_architectures", lambda: ["Haswell"])
    assert not products._turning_keeps_bits()
    monkeypatch.setattr(probe_cache, "_answers", {})
    monkeypatch.setattr(products, "_turning", [])
    monkeypatch.setattr(threads, "blas_architectures", lambda: ["SkylakeX"])
    monkeypatch.setattr(products, "_turned_products_agree", lambda: False)
    assert not products._turning_keeps_bits()
    monkeypatch.setattr(probe_cache, "_answers", {})
    monkeypatch.setattr(products, "_turning", [])
    monkeypatch.setattr(threads, "blas_architectures", lambda: [])
    assert not products._turning_keeps_bits()
