"""Matrix products under the thread policy (`threads.py`): every batched product of the op
library (MatMul, ScaledDotProductAttention, GroupedMatMul, the sparse attention ops, the input
products of the recurrent cells and sequences) goes through `matmul` or `matmul_each`; the
convolutions split their own (`convolution/plans.py`). Einsum makes no BLAS call (numpy's
einsum sums in its own loops), so it has nothing to hold.

numpy's matmul makes one BLAS call per matrix of the batch, and under the `blas` policy each
call wakes OpenBLAS's spinning threads: on a machine where another process holds a core, a
product of many small matrices took many times as long as on one thread. Under `split`
and `one`, a product with enough work runs with BLAS held to one thread; under `split` it goes
in independent parts on irscatter's threads, each writing a disjoint block of one output.

Bits. A part must compute exactly what the one call computed for its rows or matrices, and a
BLAS does not promise that for every cut:

* np.matmul's own bits depend on BLAS's thread count (f32 products differ between one thread
  and two with this machine's OpenBLAS), so the reference for `split` is the unsplit call on
  one thread, which is what `one` computes; `blas` gives numpy's default.
* A cut along the batch keeps the bits by construction: numpy already calls BLAS once per
  matrix, and a part makes the same calls on the same matrices.
* A cut through the rows of one product changes which of the kernel's tiles cover a row: an
  OpenBLAS f32 kernel takes rows 12 or 24 at a time (by the processor it was built for), with
  narrower kernels for the remainder that sum in another order, so rows cut elsewhere come out
  differently, and a block of one row turns the call into a matrix-vector product. Cuts at
  multiples of the kernel's tile height, with the remainder left to the last block, keep the
  bits. The height is the BLAS's, so each process finds it once per element type
  (`quantum`): the smallest of `QUANTA` whose cuts keep every bit of a few products of random
  values (where a cut falls inside a tile, some element differs); with none, rows are not
  cut. The tile height can be another in the columns' remainder: OpenBLAS's AVX-512 f64
  kernel took the last columns of a product 12 rows at a time where the others went 8 at a
  time, so the probe's products have column counts that leave a remainder. Nor are rows cut
  where a block's first row could be where `b` starts (`rows_may_meet`): numpy makes the
  product of an array and its own transpose with another BLAS routine.
* The same OpenBLAS builds send small products (up to about a million multiply-adds) to
  kernels of their own that sum in another order, so a block cut from a larger product came
  out differently. No cut makes a call of fewer than `LEAST_CUT_WORK` multiply-adds
  (`row_cuts`), and the probe's blocks are that size.
* A cut through the columns did not keep them on the AVX2 machines: in f32 the kernels group
  columns by the width and the row count of the call (a block of 48 of 101 columns differed,
  of one row or of 40), at no multiple found (but see column cuts below). There a product of
  few rows and one matrix is not split; it runs on one BLAS thread. The exception is one row
  times a matrix given as the transpose of a C-contiguous one (MatMul's `transpose_b`, as a
  decoder's step multiplies its weights): BLAS's matrix-vector kernel then computes each
  output from its own weight row, in groups of a few rows, so blocks of `VECTOR_ROWS` weight
  rows, the remainder in the last, keep the bits (checked once per element type and row length,
  `_vector_cuts_keep_bits`). Such a part is made with np.dot, the same call
  to BLAS, since numpy's matmul holds the GIL through a matrix-vector product: parts on
  irscatter's threads would take turns.
* Column cuts, of a product of few rows and many columns (a prompt's tokens times a Linear's
  weight), keep M whole, which BLAS runs faster than two products of half the rows. The AVX2
  machines' OpenBLAS changed bits at every column cut tried (above); its AVX-512 build kept
  them at multiples of 16 in f32 on random products, but not in f64, where products of other
  row counts than the probe's changed. So each process asks, for f32 only, whether cuts at
  multiples of COLUMN_QUANTA keep the bits of a few products (`column_quantum`, with blocks of
  LEAST_CUT_WORK as for rows), and cuts columns where one does and the columns are at least
  twice the rows, or the rows are at most COLUMN_CUT_ROWS (a transformer's tokens times a
  Linear of fewer outputs); never where `a` and `b` share memory (a block of b may be a's
  transpose).
* A part of few f32 rows times a transposed weight (a Linear's, as a prompt's tokens meet it)
  is made the other way round, the weight's rows times the rows' transpose (`_turned`, see
  TURN_ROWS), on the OpenBLAS kernels where that was measured faster and where a probe finds
  the same bits, once per process.
* Every probe's answer is kept on disk for the next process on the same BLAS and processor
  (`probe_cache.py`): a probe runs once per machine, not once per process.
* Where `b` is one matrix (2-D, or with batch axes of size 1) and `a` a batch of several,
  `split` and `one` multiply the batch as one matrix of all its rows (`_folded`): numpy would
  make one BLAS call per matrix, and a channels-last feature map times a Linear weight
  ([1, 7, 7, 768] x [768, 3072]) is then seven products of seven rows, which ran at a quarter
  of BLAS's speed on one matrix of 49. The folded product is the reference of these two
  policies: its tiles cover other rows than numpy's calls do, so its last bits may differ from
  np.matmul's, as `blas`'s do.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache, partial

import numpy as np

from irscatter.ops.common import direct_blas, probe_cache, threads
from irscatter.ops.common.blocks import block_of

# Row counts tried as the quantum of row cuts, smallest first: multiples of the tile heights of
# BLAS kernels (4, 8, 12, 16, 24).
QUANTA = (8, 12, 16, 24, 48)
VECTOR_ROWS = 64  # weight rows per block of a one-row product (see the module's docstring)
VECTOR_WORK = 1 << 18  # multiply-adds from which such a product is split
LEAST_CUT_WORK = 1 << 21  # multiply-adds of the smallest BLAS call a row cut makes (see above)
_PROBED_WORK = LEAST_CUT_WORK  # the probe's blocks, fixed here: a test lowering the bar must not change them
_BLAS_TYPES = (np.dtype(np.float32), np.dtype(np.float64))
_quantum: dict[str, int] = {}
# Column counts tried as the quantum of column cuts (the widths of BLAS's column tiles)
COLUMN_QUANTA = (16, 32, 64, 128)
_column_quantum: dict[str, int] = {}
# Rows up to which a split product is cut through its columns (where the cuts keep the bits),
# whatever the column count: two blocks of half the rows each ran 10-30% slower than two of
# half the columns (a ViT's 197 tokens times a Linear of 384 outputs), while from several
# hundred rows on the row cuts were as fast or faster. A block of b may be a's own transpose,
# so never where the two share memory.
COLUMN_CUT_ROWS = 256
_vector_cuts: dict[tuple[str, int], bool] = {}

# A product of few rows times a weight given as its transpose (a Linear's [out, in] weight, a
# prompt's tokens or a small batch), made the other way round: the weight's rows times the
# rows' transpose, whose result is the transpose of the product. OpenBLAS's AVX-512 f32 kernels
# ran such products faster that way (the fewer the rows, the more), with the same bits (each
# output is the same dot product, summed in the same order: `_turning_keeps_bits` asks it once
# per machine), while many rows, or many columns with more than a few rows, ran slower; its f64
# kernels ran slower either way, and other kernels were not measured (docs/performance.md, "Few
# rows times a weight, the other way round").
TURN_ROWS = 100  # rows up to which a product is turned when its columns are at most TURN_COLUMNS
TURN_COLUMNS = 8192
TURN_ANY_ROWS = 32  # rows up to which it is turned whatever its columns
TURN_ARCHITECTURES = ("SkylakeX", "Cooperlake", "SapphireRapids")  # OpenBLAS's names for its kernels
_turning: list[bool] = []

Product = tuple[np.ndarray, np.ndarray, np.ndarray]  # a, b, and the output block it writes
BiasedProduct = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]  # and the bias of its columns


def matmul(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """np.matmul(a, b), under the thread policy when the work is large enough. `bias` (1-D, one
    value per column of b of rank 2 or more, of the product's type): then np.matmul(a, b) + bias,
    each part adding it to the block it wrote, while the block is in its core's cache (the
    same additions, so the same bits)."""
    # A small product, told before the shapes are worked out (a decoder's attention makes two a
    # layer): its work, a bound of it, is below both thresholds below.
    small = min(threads.SPLIT_WORK, VECTOR_WORK)
    if a.size * b.size < small or (a.ndim == b.ndim > 2 and a.shape[:-2] == b.shape[:-2]
                                   and a.size * b.shape[-1] < small):
        return _plus(product(a, b), bias)
    dtype = np.result_type(a, b)
    if dtype not in _BLAS_TYPES or min(a.ndim, b.ndim) < 1 or a.ndim + b.ndim < 3 or threads.policy() == "blas":
        return _plus(product(a, b), bias)
    left, right = (a[None] if a.ndim == 1 else a), (b[:, None] if b.ndim == 1 else b)
    batch = _batch(left.shape[:-2], right.shape[:-2])
    if batch is None or left.shape[-1] != right.shape[-2]:
        return np.matmul(a, b)  # numpy's own error
    rows, inner, columns = left.shape[-2], left.shape[-1], right.shape[-1]
    work = math.prod(batch) * rows * inner * columns
    # a matrix-vector product reads a weight element per multiply-add: smaller ones are worth a thread
    least = VECTOR_WORK if rows == 1 and math.prod(batch) == 1 and _weight_rows(left, right) is not None else None
    if work < (threads.SPLIT_WORK if least is None else least):
        return _plus(product(a, b), bias)
    if math.prod(batch) > 1 and math.prod(right.shape[:-2]) == 1:
        return _folded(a, b, left, right.reshape(inner, columns), batch, bias)
    with threads.one_blas_thread(work, least):
        count = threads.parts(work, least)
        if count == 1:
            return _plus(product(a, b), bias)
        out = np.empty((*batch, rows, columns), dtype)
        _run_parts(_parts(_leading(left, len(batch)), _leading(right, len(batch)), out, count, bias))
    if b.ndim == 1:
        return out[..., 0]
    return out[..., 0, :] if a.ndim == 1 else out


def _batch(left: tuple[int, ...], right: tuple[int, ...]) -> tuple[int, ...] | None:
    """The broadcast of two batch shapes, None where they do not broadcast; most products' are
    equal or one is empty, which needs no call of numpy's (some microseconds a product)."""
    if left == right or not right:
        return left
    if not left:
        return right
    try:
        return np.broadcast_shapes(left, right)
    except ValueError:
        return None


def product(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """np.matmul(a, b, out=out); a misaligned operand (a weight left where its `.bin` put it,
    `runtime/consts.py`) goes to BLAS directly, with the same bits (`direct_blas.py`)."""
    if a.flags.aligned and b.flags.aligned:
        return np.matmul(a, b, out=out)
    return direct_blas.matmul(a, b, out)


def _vector_product(weight: np.ndarray, row: np.ndarray, out: np.ndarray) -> None:
    """np.dot(weight, row, out=out), a misaligned weight given to BLAS directly."""
    if weight.flags.aligned:
        np.dot(weight, row, out=out)
    else:
        direct_blas.dot(weight, row, out)


def _plus(out: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """out + bias, into out (a product's own new array), where there is a bias."""
    return out if bias is None else np.add(out, bias, out=out)


def _folded(a: np.ndarray, b: np.ndarray, left: np.ndarray, matrix: np.ndarray, batch: tuple[int, ...],
            bias: np.ndarray | None) -> np.ndarray:
    """np.matmul(a, b) (+ bias) for a batch of `left` matrices times one `matrix`, as one product
    of all the batch's rows (a copy of `left` where its layout has no such view)."""
    rows = left.shape[-2]
    out = matmul(left.reshape(math.prod(left.shape[:-1]), left.shape[-1]), matrix, bias)
    out = out.reshape(*batch, rows, matrix.shape[-1])
    return out[..., 0] if b.ndim == 1 else out


def matmul_each(products: Sequence[Product]) -> None:
    """np.matmul(a, b, out=out) for each product, all independent (each writes its own block),
    under the thread policy: split into parts of near-equal work, BLAS held to one thread."""
    work = sum(a.shape[0] * a.shape[1] * b.shape[1] for a, b, _ in products)
    if threads.policy() == "blas" or work < threads.SPLIT_WORK:
        for a, b, out in products:
            product(a, b, out)
        return
    with threads.one_blas_thread(work):
        _run_parts(_balanced(products, threads.parts(work)))


def _run_parts(parts: Sequence[Sequence[Product | BiasedProduct]]) -> None:
    threads.run([partial(_products, part) for part in parts])


def _products(part: Sequence[Product | BiasedProduct]) -> None:
    for a, b, out, *bias in part:
        weight = _weight_rows(a, b)
        if weight is not None:
            _vector_product(weight, a.reshape(-1), out.reshape(-1))
        elif (turned := _turned(a, b)) is not None:
            left, right = turned
            np.copyto(out[(0,) * (out.ndim - 2)], product(right.T, left.T).T)  # (a view, whatever out's strides)
        else:
            product(a, b, out)
        if bias and bias[0] is not None:
            np.add(out, bias[0], out=out)


def _turned(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """a and b as matrices where the part a @ b is made as (b^T @ a^T)^T (see TURN_ROWS): f32
    rows, C-contiguous, few enough, times the transpose of a C-contiguous weight (one matrix
    each), a BLAS call of at least LEAST_CUT_WORK multiply-adds (the probe's size: smaller
    products have kernels of their own), where this process's BLAS keeps the bits; else None."""
    if not (a.ndim >= 2 and b.ndim >= 2 and a.dtype == b.dtype == np.float32
            and math.prod(a.shape[:-2]) == math.prod(b.shape[:-2]) == 1):
        return None
    rows, inner, columns = a.shape[-2], a.shape[-1], b.shape[-1]
    left, right = a.reshape(rows, inner), b.reshape(inner, columns)
    if (1 < rows <= TURN_ROWS and (rows <= TURN_ANY_ROWS or columns <= TURN_COLUMNS)
            and rows * inner * columns >= LEAST_CUT_WORK and left.flags.c_contiguous
            and right.T.flags.c_contiguous and not np.may_share_memory(a, b) and _turning_keeps_bits()):
        return left, right
    return None


def _turning_keeps_bits() -> bool:
    """Whether this process's BLAS is one whose turned f32 products were measured faster and
    gives them the bits of the products as written, on random values: rows as few as a small
    batch's and as many as TURN_ROWS, weights of a few columns and of many, found once. Called
    with BLAS on one thread."""
    if not _turning:
        _turning.append(probe_cache.cached("turned f32 products", bool, _turning_probe))
    return _turning[0]


def _turning_probe() -> bool:
    architectures = threads.blas_architectures()
    return bool(architectures) and all(name in TURN_ARCHITECTURES for name in architectures) \
        and _turned_products_agree()


def _turned_products_agree() -> bool:
    generator = np.random.default_rng(12)
    for rows, inner, columns in ((8, 512, 520), (16, 896, 160), (49, 384, 130), (100, 160, 140)):
        a = _probe_values(generator, (rows, inner), np.dtype(np.float32))
        weight = _probe_values(generator, (columns, inner), np.dtype(np.float32))
        if not np.array_equal(np.matmul(a, weight.T), np.matmul(weight, a.T).T):
            return False
    return True


def _weight_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """When `a` is one row and `b` the transpose of a C-contiguous matrix, that matrix (a
    view: its rows are the outputs' weight rows), else None."""
    if math.prod(a.shape[:-1]) != 1 or b.ndim < 2 or math.prod(b.shape[:-2]) != 1:
        return None
    rows = np.swapaxes(b, -1, -2).reshape(b.shape[-1], b.shape[-2]) if b.ndim > 2 else b.T
    return rows if rows.flags.c_contiguous and a.dtype == rows.dtype else None


def _leading(x: np.ndarray, batch_rank: int) -> np.ndarray:
    """`x` with size-1 axes in front, so that its batch has `batch_rank` axes (a view)."""
    return x.reshape((1,) * (batch_rank + 2 - x.ndim) + x.shape)


def _parts(a: np.ndarray, b: np.ndarray, out: np.ndarray, count: int,
           bias: np.ndarray | None = None) -> list[list[BiasedProduct]]:
    """At most `count` parts of out = a @ b (+ bias, its columns cut as out's): ranges of the
    longest batch axis when it has a matrix per part, else blocks of rows where the cut keeps
    the bits (see the module's docstring); one part otherwise."""
    batch = out.shape[:-2]
    if batch:
        axis = max(range(len(batch)), key=batch.__getitem__)
        if batch[axis] >= count:
            return [[(block_of(a, axis, lo, hi), block_of(b, axis, lo, hi), block_of(out, axis, lo, hi), bias)]
                    for lo, hi in threads.spans(batch[axis], count)]
    rows = out.shape[-2]
    columns = out.shape[-1]
    sliced = (lambda lo, hi: None) if bias is None else (lambda lo, hi: bias[lo:hi])
    if (_weight_rows(a, b) is not None and columns >= 2 * VECTOR_ROWS
            and _vector_cuts_keep_bits(out.dtype, a.shape[-1])):
        return [[(a, b[..., lo:hi], out[..., lo:hi], sliced(lo, hi))]
                for lo, hi in row_blocks(columns, count, VECTOR_ROWS)]
    if (columns >= 2 * rows or rows <= COLUMN_CUT_ROWS) and not np.may_share_memory(a, b):  # (see COLUMN_CUT_ROWS)
        blocks = column_cuts(columns, rows * a.shape[-1], count, out.dtype)
        if len(blocks) > 1:
            return [[(a, b[..., lo:hi], out[..., lo:hi], sliced(lo, hi))] for lo, hi in blocks]
    if not rows_may_meet(a, b):
        return [[(a[..., lo:hi, :], b, out[..., lo:hi, :], bias)]
                for lo, hi in row_cuts(rows, a.shape[-1] * columns, count, out.dtype)]
    return [[(a, b, out, bias)]]


def rows_may_meet(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a row of a matrix of `a` may start where the matching matrix of `b` starts, so
    that numpy would see, in a block of a's rows times b, the product of an array and its own
    transpose, which it makes with another BLAS routine (other bits); conservative: True when
    unsure. Operands cut from one buffer at other offsets (a query and a key split from one
    projection) do not meet."""
    if not np.may_share_memory(a, b):
        return False
    if a.strides[:-2] != b.strides[:-2]:
        return True
    gap = b.__array_interface__["data"][0] - a.__array_interface__["data"][0]
    row = a.strides[-2]
    if row == 0:
        return gap == 0
    return gap % row == 0 and 0 <= gap // row < a.shape[-2]


def row_blocks(total: int, count: int, step: int) -> list[tuple[int, int]]:
    """At most `count` consecutive blocks of `total` rows, each starting at a multiple of
    `step` and at least `step` long, the last holding the remainder."""
    starts = sorted({round(total * i / count / step) * step for i in range(count)})
    starts = [s for s in starts if s <= total - step]
    return list(zip(starts, [*starts[1:], total]))


def row_cuts(rows: int, row_work: int, count: int, dtype: np.dtype) -> Sequence[tuple[int, int]]:
    """Blocks of a product's `rows` (each row `row_work` multiply-adds) for at most `count`
    parts, cut where the bits are kept: at multiples of the quantum, no block making a BLAS
    call of fewer than LEAST_CUT_WORK multiply-adds; one block where no cut is. Called with
    BLAS on one thread."""
    return _cuts(rows, row_work, count, quantum(dtype))


def column_cuts(columns: int, column_work: int, count: int, dtype: np.dtype) -> Sequence[tuple[int, int]]:
    """`row_cuts` for a product's columns, at multiples of `column_quantum`."""
    return _cuts(columns, column_work, count, column_quantum(dtype))


def _cuts(total: int, unit_work: int, count: int, step: int) -> tuple[tuple[int, int], ...]:
    return _cuts_with(total, unit_work, count, step, LEAST_CUT_WORK)


@cache
def _cuts_with(total: int, unit_work: int, count: int, step: int, least: int) -> tuple[tuple[int, int], ...]:
    """`_cuts`, worked out once per shape (a model's products repeat a few shapes every run)."""
    if not step:
        return ((0, total),)
    count = min(count, total // step, total * unit_work // max(1, least))
    for parts in range(count, 1, -1):  # the first try fails only where rounding to `step` shortened a block
        blocks = row_blocks(total, parts, step)
        if len(blocks) > 1 and min(hi - lo for lo, hi in blocks) * unit_work >= least:
            return tuple(blocks)
    return ((0, total),)


def _balanced(products: Sequence[Product], count: int) -> list[list[Product]]:
    """`products` in at most `count` consecutive parts of near-equal work."""
    work = [a.shape[0] * a.shape[1] * b.shape[1] for a, b, _ in products]
    return [list(products[lo:hi]) for lo, hi in threads.weighed_spans(work, count)]


def quantum(dtype: np.dtype) -> int:
    """The multiple of rows at which this process's BLAS keeps a product's bits when its rows
    are cut (0: at none of QUANTA), found once per element type. Called with BLAS on one
    thread."""
    if dtype.str not in _quantum:
        _quantum[dtype.str] = probe_cache.cached(f"row quantum {dtype.str}", int, lambda: next(
            (q for q in QUANTA if _cuts_keep_bits(dtype, q)), 0))
    return _quantum[dtype.str]


def column_quantum(dtype: np.dtype) -> int:
    """The multiple of columns at which this process's BLAS keeps a product's bits when its
    columns are cut (0: at none of COLUMN_QUANTA), found once per element type. Called with
    BLAS on one thread."""
    known = _column_quantum.get(dtype.str)
    if known is not None:
        return known
    if dtype != np.float32:  # f64's kernels changed bits at cuts that the probe's products kept
        return 0
    _column_quantum[dtype.str] = found = probe_cache.cached(f"column quantum {dtype.str}", int, lambda: next(
        (q for q in COLUMN_QUANTA if _column_cuts_keep_bits(dtype, q)), 0))
    return found


def _column_cuts_keep_bits(dtype: np.dtype, step: int) -> bool:
    """Whether products of random values cut into blocks of columns at multiples of `step`
    have the bits of the whole products, as `_cuts_keep_bits` asks it of rows: blocks of at
    least LEAST_CUT_WORK multiply-adds, one cut at an odd multiple and one at an even one, the
    last block's columns not a multiple at all, with a few rows and with many, `b` in either
    layout (a Linear's weight comes transposed), each block written into its columns of the
    output as the parts write it."""
    generator = np.random.default_rng(8)
    for rows, inner, layouts in ((64, 128, "CF"), (12, 96, "F")):
        a = _probe_values(generator, (rows, inner), dtype)
        cuts = _probe_cuts(step, rows * inner)
        for layout in layouts:
            b = (_probe_values(generator, (inner, cuts[-1]), dtype) if layout == "C"
                 else _probe_values(generator, (cuts[-1], inner), dtype).T)
            whole = np.matmul(a, b)
            cut = np.empty_like(whole)
            for lo, hi in zip(cuts, cuts[1:]):
                np.matmul(a, b[:, lo:hi], out=cut[:, lo:hi])
            if not np.array_equal(whole, cut):
                return False
    return True


def _probe_values(generator: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Random values in [-1, 1) of `dtype` for a probe's products: both signs, so that sums in
    another order round otherwise. Uniform, since normal values took most of a first run's
    probing (18 ns each, against 1 to 2)."""
    wide = np.float64 if dtype == np.float64 else np.float32
    values = generator.random(shape, dtype=wide)
    values *= 2
    values -= 1
    return values.astype(dtype, copy=False)


def _probe_cuts(step: int, unit_work: int) -> list[int]:
    """Where a probe cuts a product of rows (or columns) of `unit_work` multiply-adds each: at
    an odd and at an even multiple of `step` (not multiples of larger tile sizes), each block
    at least _PROBED_WORK multiply-adds, the last block's count not a multiple at all; the
    last item is the count."""
    least = -(-_PROBED_WORK // (unit_work * step)) * step  # the rows (columns) of a block
    return [0, least, 3 * least + step, 4 * least + step + 5]


def _vector_cuts_keep_bits(dtype: np.dtype, inner: int) -> bool:
    """Whether one row times a transposed matrix of rows of `inner` elements, made by blocks
    of `VECTOR_ROWS` weight rows with the remainder in the last block (as `row_blocks` cuts
    them), has the bits of the whole product, on random values; found once per element type
    and row length. Called with BLAS on one thread."""
    key = (dtype.str, inner)
    if key not in _vector_cuts:
        _vector_cuts[key] = probe_cache.cached(f"vector cuts {dtype.str} {inner}", bool,
                                               lambda: _vector_cuts_probe(dtype, inner))
    return _vector_cuts[key]


def _vector_cuts_probe(dtype: np.dtype, inner: int) -> bool:
    generator = np.random.default_rng(11)
    # weight rows that no kernel's group of rows divides, so that the last block's remainder is
    # taken as the whole product takes its own
    weight = _probe_values(generator, (3 * VECTOR_ROWS + 37, inner), dtype)
    row = _probe_values(generator, (1, inner), dtype)
    whole = np.matmul(row, weight.T)[0]
    cut = np.concatenate([np.dot(weight[lo:hi], row[0]) for lo, hi in row_blocks(len(weight), 3, VECTOR_ROWS)])
    return whole.tobytes() == cut.tobytes()


def _cuts_keep_bits(dtype: np.dtype, step: int) -> bool:
    """Whether products of random values cut at multiples of `step` have the bits of the whole
    products: column counts that leave a remainder to any kernel width, blocks of at least
    LEAST_CUT_WORK multiply-adds, cuts at multiples of `step` that are not multiples of larger
    tile heights (an odd one and an even one), the last block's rows not a multiple at all."""
    generator = np.random.default_rng(7)
    for inner, columns in ((128, 300), (96, 77)):
        b = _probe_values(generator, (inner, columns), dtype)
        cuts = _probe_cuts(step, inner * columns)
        a = _probe_values(generator, (cuts[-1], inner), dtype)
        whole = np.matmul(a, b)
        cut = np.empty_like(whole)
        for lo, hi in zip(cuts, cuts[1:]):
            np.matmul(a[lo:hi], b, out=cut[lo:hi])
        if not np.array_equal(whole, cut):
            return False
    return True
