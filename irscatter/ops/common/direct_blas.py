"""Matrix products of misaligned operands, made by numpy's own BLAS called directly.

Writers of IR put weights at any byte offset of the `.bin`, and numpy's matmul leaves BLAS for
its own loop (many times slower) when an operand's address does not suit its element type. A
BLAS reads its operands at any address, so `matmul` here calls the routine numpy's matmul
would have called for aligned operands, with the same arguments: the same routine on the same
numbers gives the same bits, and a misaligned weight need not be copied before its first
product (a decoder's f32 weights, gigabytes, were most of its first prompt's time).

How numpy's matmul chooses, per matrix of the batch (numpy/_core/src/umath/matmul.c.src), and
what is taken here:

* Both matrices "blasable" (one axis of unit stride, the other's stride at least the first's
  length) and none of the core dimensions 1: `?gemm`, row-major, each operand transposed
  where its rows are its columns. Taken, but for the product of an array and its own
  transpose, which numpy gives to `?syrk`.
* One row times a matrix, or a matrix times one column: `?gemv` on the matrix's layout. Taken.
* Anything else (an inner dimension of 1, an empty product, one row times one column, a
  layout BLAS does not take): numpy's own loops. Left to numpy, on aligned copies.

Where it runs: numpy's BLAS is found through threadpoolctl, its routines by their symbols
(`scipy_cblas_sgemm64_` in numpy's wheels: 64-bit integers), and `available` holds it to a
probe once per machine (`probe_cache.py`): products of a few shapes (gemm past BLAS's small-matrix kernels, and
gemv) must give numpy's bits on aligned copies of the same layout. Without a BLAS found, with
32/64-bit integers not told apart by the symbols, or where the probe differs, nothing here is
used and a misaligned weight is copied, as before.
"""

from __future__ import annotations

import ctypes
import threading
from functools import cache

import numpy as np

from irscatter.ops.common import probe_cache

# CBLAS's enumerations (cblas.h)
_ROW_MAJOR, _COLUMN_MAJOR = 101, 102
_NO_TRANSPOSE, _TRANSPOSE = 111, 112
_TYPES = {np.dtype(np.float32): ("s", ctypes.c_float), np.dtype(np.float64): ("d", ctypes.c_double)}
# The symbols of numpy's BLAS, by whether its integers are 64-bit: {} stands for the routine
# (sgemm, dgemv, ...). numpy's wheels link scipy-openblas64 with a prefix and a suffix.
_SYMBOLS = {True: ("scipy_cblas_{}64_", "cblas_{}64_", "cblas_{}_64"), False: ("cblas_{}",)}
_lock = threading.Lock()


class _Routines:
    """gemm and gemv of one element type in one BLAS library, with their C signatures."""

    def __init__(self, library: ctypes.CDLL, symbol: str, scalar: type, integer: type) -> None:
        pointer, enum = ctypes.c_void_p, ctypes.c_int
        self.integer = integer
        self.gemm = getattr(library, symbol.format(_prefix(scalar) + "gemm"))
        self.gemm.argtypes = [enum, enum, enum, integer, integer, integer, scalar, pointer, integer, pointer, integer,
                              scalar, pointer, integer]
        self.gemm.restype = None
        self.gemv = getattr(library, symbol.format(_prefix(scalar) + "gemv"))
        self.gemv.argtypes = [enum, enum, integer, integer, scalar, pointer, integer, pointer, integer, scalar,
                              pointer, integer]
        self.gemv.restype = None


def _prefix(scalar: type) -> str:
    return "s" if scalar is ctypes.c_float else "d"


@cache
def _library() -> tuple[ctypes.CDLL, str, type] | None:
    """numpy's BLAS, the pattern of its symbols and its integer type; None where not found."""
    ilp64 = _numpy_ilp64()
    if ilp64 is None:
        return None
    from threadpoolctl import threadpool_info

    for path in [info["filepath"] for info in threadpool_info() if info.get("user_api") == "blas"]:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in _SYMBOLS[ilp64]:
            if all(hasattr(library, symbol.format(name)) for name in ("sgemm", "sgemv", "dgemm", "dgemv")):
                return library, symbol, ctypes.c_int64 if ilp64 else ctypes.c_int32
    return None


def _numpy_ilp64() -> bool | None:
    """Whether numpy's BLAS takes 64-bit integers, from numpy's build configuration; None
    where it does not say (a wrong guess would pass garbage sizes)."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:
        return None
    told = " ".join(str(value) for value in blas.values()).lower()
    if "use64bitint" in told or "ilp64" in told or "openblas64" in told:
        return True
    return False if "openblas" in told else None


@cache
def _routines(dtype: np.dtype) -> _Routines | None:
    found = _library()
    if found is None:
        return None
    library, symbol, integer = found
    return _Routines(library, symbol, _TYPES[dtype][1], integer)


_probed: dict[np.dtype, bool] = {}


def available(dtype: np.dtype) -> bool:
    """Whether products of `dtype` (f32, f64) with misaligned operands go to BLAS directly
    here, with numpy's bits (probed once per machine)."""
    dtype = np.dtype(dtype)
    if dtype not in _TYPES:
        return False
    with _lock:
        if dtype not in _probed:
            _probed[dtype] = _routines(dtype) is not None and probe_cache.cached(
                f"direct {dtype.str}", bool, lambda: _probe(dtype))
        return _probed[dtype]


def misaligned(shape: tuple[int, ...], dtype: np.dtype, order: str = "C") -> np.ndarray:
    """An array of `shape` at an address that does not suit `dtype` (one byte past an aligned
    one), in C or Fortran order: what a weight at an odd offset of a `.bin` looks like."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    memory = np.empty(count * dtype.itemsize + dtype.alignment, np.uint8)
    start = (-memory.ctypes.data) % dtype.alignment + 1
    flat = memory[start:start + count * dtype.itemsize].view(dtype) if dtype.itemsize == 1 else \
        np.frombuffer(memory.data, dtype, count, start)
    return flat.reshape(shape, order=order)  # type: ignore[call-overload]


def _probe(dtype: np.dtype) -> bool:
    """Whether the direct calls give numpy's bits for aligned copies of the same layout: a
    decoder's products (tokens times a Linear's transposed weight, one row as a step makes
    it) and a product past the small-matrix kernels."""
    rng = np.random.default_rng(5)
    for rows, inner, columns in ((1, 96, 260), (3, 96, 130), (37, 200, 300), (24, 256, 512)):
        a = rng.standard_normal((rows, inner)).astype(dtype)
        weight = misaligned((columns, inner), dtype)
        weight[...] = rng.standard_normal((columns, inner))
        b = weight.T
        out = np.empty((rows, columns), dtype)
        if not _direct(a, b, out) or not np.array_equal(out, np.matmul(a, weight.copy().T)):
            return False
        column = np.empty(columns, dtype)
        if not _direct(weight, a[0], column) or not np.array_equal(column, np.dot(weight.copy(), a[0])):
            return False
    return True


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """np.matmul(a, b, out=out) for operands of which one at least is misaligned: BLAS called
    directly where numpy would call it (see the module's docstring), else numpy's matmul on
    aligned copies of the misaligned operands."""
    dtype = np.result_type(a, b)
    if a.dtype == b.dtype == dtype and a.ndim >= 1 and b.ndim >= 1 and available(dtype):
        shape = _result_shape(a, b)
        if shape is not None and (out is None or (out.shape == shape and out.dtype == dtype)):
            usable = out is not None and out.flags.aligned and _rows_of_matrices(out, a, b) \
                and not np.may_share_memory(out, a) and not np.may_share_memory(out, b)
            target = out if usable and out is not None else np.empty(shape, dtype)
            if _each(a, b, target):
                if out is not None and target is not out:
                    np.copyto(out, target)
                return target if out is None else out
    return np.matmul(_aligned(a), _aligned(b), out=out)


def dot(matrix: np.ndarray, vector: np.ndarray, out: np.ndarray) -> None:
    """np.dot(matrix, vector, out=out) for a 2-D matrix and a 1-D vector (a matrix-vector
    product, `?gemv`), one of them misaligned (out too, possibly)."""
    if matrix.ndim == 2 and vector.ndim == 1 and available(matrix.dtype):
        usable = out.flags.c_contiguous and out.flags.aligned and not np.may_share_memory(out, matrix) \
            and not np.may_share_memory(out, vector)
        target = out if usable else np.empty(out.shape, out.dtype)
        if _direct(matrix, vector, target):
            if target is not out:
                np.copyto(out, target)
            return
    np.copyto(out, np.dot(_aligned(matrix), _aligned(vector)))


def _aligned(x: np.ndarray) -> np.ndarray:
    return x if x.flags.aligned else x.copy(order="K")


def _rows_of_matrices(out: np.ndarray, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether BLAS can write `out` as it is: C-contiguous, or (neither operand a vector)
    matrices of contiguous rows, such as a block of an output's columns that a split product
    writes."""
    if out.flags.c_contiguous:
        return True
    size = out.itemsize
    return a.ndim >= 2 and b.ndim >= 2 and out.ndim >= 2 and _blasable(out.strides[-2], out.strides[-1], out.shape[-1], size)


def _matrices(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]] | None:
    """a and b as numpy's matmul sees them (a vector as one row, or as one column) and their
    batch's shape; None where they do not fit (numpy's own error then)."""
    left, right = (a[None] if a.ndim == 1 else a), (b[:, None] if b.ndim == 1 else b)
    if left.shape[-1] != right.shape[-2]:
        return None
    try:
        return left, right, np.broadcast_shapes(left.shape[:-2], right.shape[:-2])
    except ValueError:
        return None


def _result_shape(a: np.ndarray, b: np.ndarray) -> tuple[int, ...] | None:
    found = _matrices(a, b)
    if found is None:
        return None
    left, right, batch = found
    return (*batch, *(() if a.ndim == 1 else (left.shape[-2],)), *(() if b.ndim == 1 else (right.shape[-1],)))


def _each(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """out = a @ b (operands that fit: `_result_shape`), a BLAS call per matrix of the batch, as
    numpy's loop makes them; False, with nothing written, where some matrix's product is not
    one taken here."""
    found = _matrices(a, b)
    assert found is not None
    left, right, batch = found
    matrices = (*batch, left.shape[-2], right.shape[-1])
    target = out if out.shape == matrices else out.reshape(matrices)  # (then out is C-contiguous: a view)
    lefts = np.broadcast_to(left, (*batch, *left.shape[-2:]))
    rights = np.broadcast_to(right, (*batch, *right.shape[-2:]))
    pairs = [(lefts[index], rights[index], target[index]) for index in np.ndindex(*batch)]
    if not all(_taken(x, y) for x, y, _ in pairs):
        return False
    for x, y, o in pairs:
        _direct(x, y, o)
    return True


def _blasable(stride1: int, stride2: int, length2: int, itemsize: int) -> bool:
    """numpy's test of a 2-D layout BLAS takes: the second axis contiguous, the first's stride
    a whole number of elements no shorter than the second axis."""
    return stride2 == itemsize and stride1 % itemsize == 0 and stride1 // itemsize >= length2


def _taken(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether numpy would give the product of the matrices a [m, n] and b [n, p] (or a
    matrix and a vector) to gemm or gemv, and it is not a product of an array and its own
    transpose; and every size and stride fits the BLAS's integers (numpy's own loop takes
    larger ones)."""
    size = a.dtype.itemsize
    routines = _routines(a.dtype)
    most = 2**31 - 2 if routines is None or routines.integer is ctypes.c_int32 else 2**63 - 2
    if max((*a.shape, *b.shape, *(abs(s) // size for s in (*a.strides, *b.strides)))) > most:
        return False
    if b.ndim == 1:
        return a.shape[0] > 1 and a.shape[1] > 1 and _blasable(b.strides[0], size, 1, size) and (
            _blasable(a.strides[0], a.strides[1], a.shape[1], size) or _blasable(a.strides[1], a.strides[0], a.shape[0], size))
    (m, n), p = a.shape, b.shape[1]
    if 0 in (m, n, p) or n == 1 or (m == 1 and p == 1):
        return False
    a_ok = _blasable(a.strides[0], a.strides[1], n, size) or _blasable(a.strides[1], a.strides[0], m, size)
    b_ok = _blasable(b.strides[0], b.strides[1], p, size) or _blasable(b.strides[1], b.strides[0], n, size)
    if m == 1:
        return b_ok and _blasable(a.strides[1], size, 1, size)
    if p == 1:
        return a_ok and _blasable(b.strides[0], size, 1, size)
    return a_ok and b_ok and not (a.ctypes.data == b.ctypes.data and m == p)


def _direct(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """The BLAS call numpy's matmul makes for a [m, n] @ b [n, p] (or a matrix times a vector)
    into `out`, C-contiguous; False, with nothing written, where it is not one taken here."""
    if not _taken(a, b):
        return False
    routines = _routines(a.dtype)
    assert routines is not None
    size = a.dtype.itemsize
    if b.ndim == 1:  # a matrix times a vector (np.dot's)
        _gemv(routines, a, a.strides[0], a.strides[1], b, b.strides[0], out, out.strides[0], *a.shape)
    elif a.shape[0] == 1:  # one row times a matrix: numpy's vector_matrix, b seen as [p, n]
        _gemv(routines, b, b.strides[1], b.strides[0], a, a.strides[1], out, out.strides[1], b.shape[1], b.shape[0])
    elif b.shape[1] == 1:  # a matrix times one column: numpy's matrix_vector
        _gemv(routines, a, a.strides[0], a.strides[1], b, b.strides[0], out, out.strides[0], *a.shape)
    else:
        (m, n), p = a.shape, b.shape[1]
        first, lda = _orientation(a.strides, n, size)
        second, ldb = _orientation(b.strides, p, size)
        routines.gemm(_ROW_MAJOR, first, second, m, p, n, 1.0, a.ctypes.data, lda, b.ctypes.data, ldb, 0.0,
                      out.ctypes.data, out.strides[0] // size)
    return True


def _orientation(strides: tuple[int, ...], columns: int, size: int) -> tuple[int, int]:
    """(transpose flag, leading dimension) of a matrix in a row-major gemm, as numpy picks them."""
    if _blasable(strides[0], strides[1], columns, size):
        return _NO_TRANSPOSE, strides[0] // size
    return _TRANSPOSE, strides[1] // size


def _gemv(routines: _Routines, matrix: np.ndarray, stride_m: int, stride_n: int, vector: np.ndarray,
          stride_v: int, out: np.ndarray, stride_out: int, m: int, n: int) -> None:
    """numpy's gemv: out [m] = matrix [m, n] (strides given) times vector [n]."""
    size = matrix.dtype.itemsize
    if _blasable(stride_m, stride_n, n, size):
        order, lda = _COLUMN_MAJOR, stride_m // size
    else:
        order, lda = _ROW_MAJOR, stride_n // size
    routines.gemv(order, _TRANSPOSE, n, m, 1.0, matrix.ctypes.data, lda, vector.ctypes.data, stride_v // size, 0.0,
                  out.ctypes.data, stride_out // size)
