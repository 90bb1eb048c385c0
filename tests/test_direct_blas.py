"""Products of misaligned operands by numpy's BLAS called directly (`ops/common/direct_blas.py`),
and the weights a run reads where the `.bin` holds them (`runtime/consts.py`).

Every product is held to numpy's matmul (or dot) on aligned copies of the same layout, bit for
bit: the direct call is only worth making if it gives those bits."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import layer, net, param, port, result, write
from threadpoolctl import threadpool_limits

import irscatter
from irscatter.ops.common import direct_blas, products

FLOATS = [np.float32, np.float64]
needs_direct = pytest.mark.skipif(not (direct_blas.available(np.float32) and direct_blas.available(np.float64)),
                                  reason="numpy's BLAS is not one called directly here")


def _twins(shape, dtype, order="C", seed=0):
    """The same values at an aligned address and at a misaligned one, in the same layout."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    aligned = np.asarray(values, order=order).copy(order=order)
    moved = direct_blas.misaligned(shape, dtype, order)
    moved[...] = values
    assert values.size == 0 or (not moved.flags.aligned and aligned.strides == moved.strides)  # (empty: aligned)
    return aligned, moved


def test_a_misaligned_array_looks_like_a_weight_at_an_odd_offset():
    for dtype, order in itertools.product(FLOATS, "CF"):
        x = direct_blas.misaligned((3, 5), dtype, order)
        assert x.shape == (3, 5) and x.dtype == dtype and not x.flags.aligned
        assert x.flags.c_contiguous == (order == "C") and x.flags.f_contiguous == (order == "F")


# (rows, inner, columns): products past and below BLAS's small-matrix kernels, a row times a
# matrix and a matrix times a column (gemv), and the products numpy makes in its own loops
# (an inner dimension of 1, empty products, one row times one column).
SHAPES = [(2, 64, 300), (37, 200, 300), (64, 512, 260), (1, 96, 300), (300, 64, 1), (5, 1, 7), (1, 9, 1),
          (0, 5, 4), (3, 0, 4), (3, 5, 0), (128, 96, 17)]


@needs_direct
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_products_give_numpys_bits_on_aligned_copies(dtype, shape):
    rows, inner, columns = shape
    for a_order, b_order, transposed, threads in itertools.product("CF", "CF", (False, True), (1, 2)):
        a, a_moved = _twins((rows, inner), dtype, a_order, 1)
        if transposed:  # a weight [columns, inner] as MatMul's transpose_b gives it
            b, b_moved = (x.T for x in _twins((columns, inner), dtype, b_order, 2))
        else:
            b, b_moved = _twins((inner, columns), dtype, b_order, 2)
        with threadpool_limits(threads):
            expected = np.matmul(a, b)
            for left, right in ((a, b_moved), (a_moved, b), (a_moved, b_moved)):
                got = direct_blas.matmul(left, right)
                assert got.dtype == expected.dtype and got.shape == expected.shape
                assert got.tobytes() == expected.tobytes(), (a_order, b_order, transposed, threads)


@needs_direct
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: np.dtype(t).name)
def test_blocks_of_a_weights_columns_as_the_split_products_cut_them(dtype):
    a = np.random.default_rng(3).standard_normal((24, 96)).astype(dtype)
    weight, moved = _twins((400, 96), dtype)
    for lo, hi in ((0, 128), (128, 400), (16, 17)):
        out = np.empty((24, hi - lo), dtype)
        direct_blas.matmul(a, moved.T[:, lo:hi], out)
        assert out.tobytes() == np.matmul(a, weight.T[:, lo:hi]).tobytes()


@needs_direct
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: np.dtype(t).name)
def test_batches_broadcast_and_vectors_as_numpy_has_them(dtype):
    rng = np.random.default_rng(4)
    weight, moved = _twins((64, 80), dtype)
    cases = [
        (rng.standard_normal((3, 5, 64)).astype(dtype), weight, moved, "rhs"),  # a batch times one weight
        (rng.standard_normal((2, 1, 5, 64)).astype(dtype), *_twins((3, 64, 80), dtype), "rhs"),  # rank 4 broadcast
        (rng.standard_normal(64).astype(dtype), weight, moved, "rhs"),  # a vector times a matrix
        (rng.standard_normal(80).astype(dtype), weight.T, moved.T, "rhs"),
        (rng.standard_normal(80).astype(dtype), weight, moved, "lhs"),  # a matrix times a vector
        (rng.standard_normal((4, 80, 7)).astype(dtype), weight, moved, "lhs"),  # one matrix times a batch
    ]
    for other, plain, misaligned, side in cases:
        expected = np.matmul(other, plain) if side == "rhs" else np.matmul(plain, other)
        got = direct_blas.matmul(other, misaligned) if side == "rhs" else direct_blas.matmul(misaligned, other)
        assert got.shape == expected.shape and got.tobytes() == expected.tobytes()


@needs_direct
def test_an_array_times_its_own_transpose_is_left_to_numpy():
    """numpy gives it to syrk (another routine, other bits): it goes to numpy on an aligned copy."""
    a, moved = _twins((40, 70), np.float32)
    assert direct_blas.matmul(moved, moved.T).tobytes() == np.matmul(a, a.T).tobytes()


@needs_direct
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: np.dtype(t).name)
def test_an_output_given_is_written_whatever_its_layout(dtype):
    a = np.random.default_rng(5).standard_normal((6, 50)).astype(dtype)
    weight, moved = _twins((50, 30), dtype)
    expected = np.matmul(a, weight)
    for out in (np.empty((6, 30), dtype), np.empty((30, 6), dtype).T, np.empty((6, 60), dtype)[:, ::2],
                np.empty((6, 50), dtype)[:, 10:40], np.empty((2, 6, 30), dtype)[1]):
        returned = direct_blas.matmul(a, moved, out)
        assert returned is out and out.tobytes() == expected.tobytes()
    misplaced = direct_blas.misaligned((6, 30), dtype)
    direct_blas.matmul(a, moved, misplaced)
    assert misplaced.tobytes() == expected.tobytes()


@needs_direct
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: np.dtype(t).name)
def test_a_matrix_times_a_vector_as_np_dot_makes_it(dtype):
    row = np.random.default_rng(6).standard_normal(96).astype(dtype)
    weight, moved = _twins((260, 96), dtype)
    for lo, hi in ((0, 260), (64, 128)):
        out = np.empty(hi - lo, dtype)
        direct_blas.dot(moved[lo:hi], row, out)
        assert out.tobytes() == np.dot(weight[lo:hi], row).tobytes()


def test_other_types_and_mixed_types_are_numpys_products_of_aligned_copies():
    rng = np.random.default_rng(7)
    for dtype in (np.int32, np.int64, np.float16, np.complex64):
        values = rng.integers(-50, 50, (20, 30)).astype(dtype)
        moved = direct_blas.misaligned((20, 30), dtype) if np.dtype(dtype).alignment > 1 else values.copy()
        moved[...] = values
        a = rng.integers(-5, 5, (4, 20)).astype(dtype)
        assert direct_blas.matmul(a, moved).tobytes() == np.matmul(a, values).tobytes()
    a32 = rng.standard_normal((4, 20)).astype(np.float32)
    weight, moved = _twins((20, 30), np.float64)
    assert direct_blas.matmul(a32, moved).tobytes() == np.matmul(a32, weight).tobytes()


def test_operands_are_never_written():
    a, a_moved = _twins((37, 200), np.float32)
    b, b_moved = _twins((200, 300), np.float32)
    before = a_moved.tobytes(), b_moved.tobytes()
    direct_blas.matmul(a_moved, b_moved)
    assert (a_moved.tobytes(), b_moved.tobytes()) == before


def test_without_a_blas_found_nothing_is_called_directly(monkeypatch):
    """A BLAS not found (or whose probe differed) leaves every product to numpy on aligned copies."""
    monkeypatch.setattr(direct_blas, "_probed", {})
    monkeypatch.setattr(direct_blas, "_routines", lambda dtype: None)
    assert not direct_blas.available(np.float32)
    monkeypatch.setattr(direct_blas, "_direct", lambda *args: pytest.fail("called BLAS directly"))
    a = np.random.default_rng(8).standard_normal((8, 64)).astype(np.float32)
    weight, moved = _twins((64, 40), np.float32)
    assert direct_blas.matmul(a, moved).tobytes() == np.matmul(a, weight).tobytes()


def test_a_probe_that_differs_turns_the_direct_calls_off(monkeypatch):
    monkeypatch.setattr(direct_blas, "_probed", {})
    monkeypatch.setattr(direct_blas.probe_cache, "_answers", {})
    real = direct_blas._direct

    def off_by_one_ulp(a, b, out):
        done = real(a, b, out)
        out.flat[0] = np.nextafter(out.flat[0], np.inf)
        return done
    monkeypatch.setattr(direct_blas, "_direct", off_by_one_ulp)
    assert not direct_blas.available(np.float32)


def test_aligned_operands_go_to_numpys_matmul_untouched(monkeypatch):
    monkeypatch.setattr(direct_blas, "matmul", lambda *args: pytest.fail("aligned operands taken aside"))
    a, b = np.ones((3, 4), np.float32), np.ones((4, 5), np.float32)
    assert np.array_equal(products.product(a, b), np.matmul(a, b))


# --- a run's weights where the .bin holds them ---


def _embedding_and_head(tmp_path, offset: int, extra_reader: bool = False, rows: int = 200):
    """ids [1, 3] -> Gather(table) -> MatMul(x, table^T): a decoder's tied embedding and head,
    the table [rows, 16] f32 at byte `offset` of the .bin (larger than the constants inference
    carries, which it reads aligned); with `extra_reader`, also table + table added into a
    second output."""
    rng = np.random.default_rng(9)
    table = rng.standard_normal((rows, 16)).astype(np.float32)
    ids, axis = np.array([[3, 0, rows - 1]], np.int64), np.array(0, np.int64)
    blob = bytes(offset) + table.tobytes()
    axis_at = len(blob)
    blob += axis.tobytes()
    layers = [
        param(0, "ids", (1, 3), et="i64", precision="I64"),
        layer(1, "table", "Const", data={"element_type": "f32", "shape": f"{rows},16", "offset": offset,
                                         "size": table.nbytes}, outputs=[port(0, "FP32", (rows, 16))]),
        layer(2, "axis", "Const", data={"element_type": "i64", "shape": "", "offset": axis_at, "size": 8},
              outputs=[port(0, "I64", ())]),
        layer(3, "embed", "Gather", "opset8", data={"batch_dims": "0"},
              inputs=[port(0, "FP32", (rows, 16)), port(1, "I64", (1, 3)), port(2, "I64", ())],
              outputs=[port(3, "FP32", (1, 3, 16))]),
        layer(4, "head", "MatMul", data={"transpose_a": "false", "transpose_b": "true"},
              inputs=[port(0, "FP32", (1, 3, 16)), port(1, "FP32", (rows, 16))], outputs=[port(2, "FP32", (1, 3, rows))]),
        result(5, "logits", (1, 3, rows)),
    ]
    edges = [(0, 0, 3, 1), (1, 0, 3, 0), (2, 0, 3, 2), (3, 3, 4, 0), (1, 0, 4, 1), (4, 2, 5, 0)]
    if extra_reader:
        layers += [layer(6, "twice", "Add", data={"auto_broadcast": "numpy"},
                         inputs=[port(0, "FP32", (rows, 16)), port(1, "FP32", (rows, 16))],
                         outputs=[port(2, "FP32", (rows, 16))]),
                   result(7, "twice_out", (rows, 16))]
        edges += [(1, 0, 6, 0), (1, 0, 6, 1), (6, 2, 7, 0)]
    model = irscatter.read_model(write(tmp_path, net(layers, edges), blob))
    expected = np.matmul(table[ids[0]][None], table.T)
    return model, ids, expected


def _handed(compiled, ids):
    """The table as the Gather and the MatMul were handed it in a watched run, and the logits."""
    seen = {}
    out = compiled.run({"ids": ids}, hook=lambda layer, inputs, outputs: seen.setdefault(layer.name, inputs))
    return (seen["embed"][0], seen["head"][1]), out["logits"]


@needs_direct
def test_a_misaligned_weight_read_by_products_and_lookups_is_read_where_it_lies_on_a_first_run(tmp_path):
    model, ids, expected = _embedding_and_head(tmp_path, 5)
    data = model.layers[1].const_data
    compiled = model.compile()
    handed, logits = _handed(compiled, ids)
    assert logits.tobytes() == expected.tobytes()
    assert data._value is None  # no copy made
    for table in handed:
        assert not table.flags.aligned and not table.flags.writeable and np.shares_memory(table, data.buffer)


@needs_direct
def test_the_second_run_reads_an_aligned_copy_with_the_same_bits(tmp_path):
    """A model run many times copies its misaligned weights once, on its second run: a product
    streams an aligned weight faster."""
    model, ids, expected = _embedding_and_head(tmp_path, 5)
    data = model.layers[1].const_data
    compiled = model.compile()
    assert compiled.run({"ids": ids})["logits"].tobytes() == expected.tobytes()
    assert data._value is None
    handed, logits = _handed(compiled, ids)
    assert logits.tobytes() == expected.tobytes()
    assert all(table.flags.aligned and np.shares_memory(table, data._value) for table in handed)
    assert compiled.run({"ids": ids})["logits"].tobytes() == expected.tobytes()


def test_a_misaligned_weight_with_another_reader_is_copied(tmp_path):
    """An Add (numpy's ufuncs loop slowly over a misaligned array) gets the aligned copy, and so
    does every other reader of the same Const."""
    model, ids, expected = _embedding_and_head(tmp_path, 5, extra_reader=True)
    compiled = model.compile()
    handed, logits = _handed(compiled, ids)
    assert logits.tobytes() == expected.tobytes()
    assert all(table.flags.aligned for table in handed)


def test_an_aligned_weight_stays_a_view_for_every_reader(tmp_path):
    model, ids, expected = _embedding_and_head(tmp_path, 8)
    handed, logits = _handed(model.compile(), ids)
    assert logits.tobytes() == expected.tobytes()
    assert all(table.flags.aligned and np.shares_memory(table, model.layers[1].const_data.buffer) for table in handed)


@needs_direct
def test_the_pages_a_first_run_read_are_let_go_once_copied(tmp_path, monkeypatch):
    """The copy of a weight whose view a first run read lets the view's mapped pages go (they
    would count in the process's memory beside the copy); the view still reads the same values
    from the page cache. A weight copied before any view of it was read lets nothing go."""
    from irscatter.ir import files

    released = []
    monkeypatch.setattr(files.WeightsFile, "release", lambda self, offset, size, let_go=files.WeightsFile.release:
                        released.append((offset, size)) or let_go(self, offset, size))
    rows = 4096  # 256 KiB of weights: whole pages inside
    model, ids, expected = _embedding_and_head(tmp_path, 5, rows=rows)
    data = model.layers[1].const_data
    compiled = model.compile()
    compiled.run({"ids": ids})
    view = data._view
    assert released == [] and view is not None
    before = view.copy()
    assert compiled.run({"ids": ids})["logits"].tobytes() == expected.tobytes()
    assert released == [(5, rows * 16 * 4)]
    assert view.tobytes() == before.tobytes()

    released.clear()
    fresh, _, _ = _embedding_and_head(tmp_path, 5, rows=rows)
    fresh.layers[1].const_value  # noqa: B018  (copied before any view of it was read)
    assert released == []


@needs_direct
def test_an_output_that_overlaps_an_operand_gets_numpys_answer():
    """numpy's matmul multiplies into a temporary where its output overlaps an operand; so does
    the direct call, and a matrix-vector product written over its own matrix."""
    square, moved = _twins((64, 64), np.float32)
    expected = np.matmul(square, square)
    direct_blas.matmul(square.copy(), moved, moved)  # a @ b written over b
    assert moved.tobytes() == expected.tobytes()
    weight, moved = _twins((64, 64), np.float32)
    direct_blas.dot(moved, moved[0], moved[1])  # written over the matrix's second row
    assert moved[1].tobytes() == np.dot(weight, weight[0]).tobytes()


def test_sizes_past_the_blas_integers_are_left_to_numpy(monkeypatch):
    if not direct_blas.available(np.float32):
        pytest.skip("numpy's BLAS is not one called directly here")
    routines = direct_blas._routines(np.dtype(np.float32))
    monkeypatch.setattr(routines, "integer", __import__("ctypes").c_int32)
    a = np.ones((4, 8), np.float32)
    huge = np.lib.stride_tricks.as_strided(direct_blas.misaligned((8, 3), np.float32), (8, 3), (2**33, 4))
    assert not direct_blas._taken(a, huge)
