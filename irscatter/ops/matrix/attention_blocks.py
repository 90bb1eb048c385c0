"""ScaledDotProductAttention's arithmetic by blocks of query rows, for large logits.

The pseudo-code makes the logits [N, ..., L, S] whole, then passes over them five times (scale,
bias, maximum, exp, sum and quotient): with a long source (a UNet's 64x64 feature map attends to
4096 positions) the logits are hundreds of megabytes, and each pass goes through main memory.
Here each matrix of the batch goes in blocks of query rows: a block's logits are made, biased,
turned into weights and multiplied by value while they are still in a core's cache, and the
blocks run on the thread policy's parts (`threads.py`), BLAS held to one thread.

Bits: the same as the whole-array arithmetic of `scaled_dot_product_attention.py`, taken only
where they are:

* The products are cut through the query rows where `products.row_cuts` cuts the batched
  products (at multiples of the quantum found on this process's BLAS, no block smaller than
  BLAS's own small-product kernels take); each block is the product one BLAS thread makes,
  which is what `products.matmul` gives for work this large.
* Scaling, biasing, exp and the quotient are element-wise; the maximum and the sum reduce
  each row along its own contiguous S values, the same loop whichever rows sit beside it.
* Not taken: under the `blas` policy (numpy's threaded products have other bits), for work
  below `threads.SPLIT_WORK` (products that small keep numpy's threading too), where a
  mask adds batch dimensions, and where a block's query rows may start where its key matrix
  starts (numpy multiplies an array by its own transpose with another BLAS routine). Query, key
  and value cut from one projection (a Split of [q | k | v]) share a buffer at other offsets,
  and take the blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from irscatter.ops.common import products, threads

# Logits per block: a block of 128 K elements (512 KiB in f32) stays in a core's L2 cache.
BLOCK_LOGITS = 1 << 17


def usable(query: np.ndarray, key: np.ndarray, value: np.ndarray, mask: np.ndarray | None) -> bool:
    """Whether the blocks give the whole arithmetic's bits for these operands (see above)."""
    if threads.policy() == "blas" or query.dtype not in (np.float32, np.float64):
        return False
    batch = query.shape[:-2]
    if key.shape[:-2] != batch or value.shape[:-2] != batch or 0 in key.shape[-2:]:
        return False
    rows, inner, source, width = query.shape[-2], query.shape[-1], key.shape[-2], value.shape[-1]
    matrices = math.prod(batch)
    if min(matrices * rows * inner * source, matrices * rows * source * width) < threads.SPLIT_WORK:
        return False
    if mask is not None:
        if mask.ndim == 1:
            return False  # refused, with its label, by the whole arithmetic's check
        try:
            if np.broadcast_shapes((*batch, rows, source), mask.shape) != (*batch, rows, source):
                return False
        except ValueError:
            return False  # refused, with its label, by the whole arithmetic's check
    return not products.rows_may_meet(query, key)


def attend(query: np.ndarray, key: np.ndarray, value: np.ndarray, factor: np.ndarray | np.generic,
           bias: np.ndarray | None, causal: bool, *, compiled: bool = False) -> np.ndarray:
    """softmax(query @ key^T * factor + bias) @ value for operands `usable` accepted; `bias` is
    the mask as the logits add it (of the logits' type, broadcasting to them). `compiled`: the
    softmax's passes other than the exponential and the sums in `softmax_kernels`' loops (numba;
    the same bits)."""
    batch, rows = query.shape[:-2], query.shape[-2]
    queries, keys, values = (x.reshape(-1, *x.shape[-2:]) for x in (query, key, value))
    biases = None if bias is None else _per_matrix(bias, batch, rows, key.shape[-2])
    out = np.empty((len(queries), rows, value.shape[-1]), query.dtype)
    work = len(queries) * rows * key.shape[-2] * (query.shape[-1] + value.shape[-1])
    with threads.one_blas_thread(work):
        blocks = _row_blocks(rows, key.shape[-2], min(query.shape[-1], value.shape[-1]), query.dtype)
        count = threads.parts(work)
        tasks = _tasks(len(queries), rows, key.shape[-2], blocks, count)
        parts = threads.spans(len(tasks), count)
        weigh = _compiled_weights if compiled else _weights
        threads.run([partial(_blocks, tasks[lo:hi], queries, keys, values, factor, biases, causal, out, weigh)
                     for lo, hi in parts])
    return out.reshape(*batch, rows, value.shape[-1])


def _per_matrix(bias: np.ndarray, batch: tuple[int, ...], rows: int, source: int) -> list[np.ndarray]:
    """The bias as one [L or 1, S] view per matrix of the batch, in the batch's order."""
    height = bias.shape[-2] if bias.ndim >= 2 else 1
    stretched = np.broadcast_to(bias, (*batch, height, source))
    return [stretched[index] for index in np.ndindex(*batch)]


def _row_blocks(rows: int, source: int, depth: int, dtype: np.dtype) -> Sequence[tuple[int, int]]:
    """Blocks of query rows of about BLOCK_LOGITS logits, cut where the products keep their bits
    (`products.row_cuts`: each row takes `depth` multiply-adds a logit in the narrower of the
    two products); one block where the rows are too few to cut. Called with BLAS on one thread."""
    count = max(1, rows * source // BLOCK_LOGITS)
    return products.row_cuts(rows, depth * source, count, dtype)


def _tasks(matrices: int, rows: int, source: int, blocks: Sequence[tuple[int, int]],
           parts: int) -> list[tuple[int, int, int, int]]:
    """The tasks (first matrix, end, first row, end): each block of rows of a matrix, or where a
    matrix is one block, a run of whole matrices of about BLOCK_LOGITS logits in all, and no
    longer than a part's share of the matrices. Many small matrices (a Swin's windows of 49
    positions) would otherwise make eight numpy calls each, and the parts of a split layer,
    which take the GIL at every call, would wait for each other."""
    if len(blocks) > 1:
        return [(m, m + 1, lo, hi) for m in range(matrices) for lo, hi in blocks]
    run = max(1, min(BLOCK_LOGITS // max(1, rows * source), -(-matrices // parts)))
    return [(m, min(m + run, matrices), 0, rows) for m in range(0, matrices, run)]


def _blocks(tasks: list[tuple[int, int, int, int]], queries: np.ndarray, keys: np.ndarray, values: np.ndarray,
            factor: np.ndarray | np.generic, biases: list[np.ndarray] | None, causal: bool, out: np.ndarray,
            weigh: Callable[..., None]) -> None:
    """Each task's logits, weights and products; a run of matrices as stacks, whose products
    numpy makes one BLAS call a matrix, as it makes each matrix's alone, and whose reductions go
    along each row's own S values."""
    for first, end, lo, hi in tasks:
        logits = np.matmul(queries[first:end, lo:hi], np.swapaxes(keys[first:end], -1, -2))
        bias = None if biases is None else np.stack([b if b.shape[0] == 1 else b[lo:hi] for b in biases[first:end]])
        weigh(logits, factor, bias, causal, lo)
        np.matmul(logits, values[first:end], out=out[first:end, lo:hi])


def _weights(logits: np.ndarray, factor: np.ndarray | np.generic, bias: np.ndarray | None, causal: bool,
             first_row: int) -> None:
    """The logits [matrices, rows, S] of query rows from `first_row` on turned into the softmax's
    weights, in place, by numpy's passes."""
    zero, minus_infinity = logits.dtype.type(0), logits.dtype.type(-np.inf)
    logits *= factor
    if causal:
        above = np.arange(logits.shape[-1])[None, :] > np.arange(first_row, first_row + logits.shape[-2])[:, None]
        logits += np.where(above, minus_infinity, zero)
    elif bias is not None:
        logits += bias
    logits -= logits.max(axis=-1, keepdims=True)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=-1, keepdims=True)


def _compiled_weights(logits: np.ndarray, factor: np.ndarray | np.generic, bias: np.ndarray | None, causal: bool,
                      first_row: int) -> None:
    """`_weights` with its scaling, bias, maximum, subtraction and quotient in compiled loops."""
    from irscatter.ops.common import softmax_kernels  # (imports numba: only when used)

    softmax_kernels.scale_and_shift(logits, factor, bias, causal, first_row)
    softmax_kernels.exp_and_divide(logits.reshape(-1, logits.shape[-1]))
