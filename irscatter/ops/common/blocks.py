"""Element-wise kernels over large arrays: block by block, and on the thread policy's parts.

A kernel written as whole-array numpy makes a temporary per step (Gelu's f64 copy, its erfc
and the product; Sigmoid's negation, exp, sum and quotient), and on a large array each
temporary is a pass through main memory. Run on blocks of `BLOCK` elements, the temporaries stay
in a core's cache; and a large array is cut into one part per core (`threads.parts`), each part
writing its own range of one output on irscatter's threads.

Bits. An output element depends on its input element alone, and numpy's loops give an element
the same bits wherever it sits in an array (their vector loops and the masked or scalar tails
compute the same function), so the result does not depend on the cut; only a NaN's sign and
payload may differ, as they already do between numpy's vector loop and its tail. tests/test_blocks.py
holds every kernel of the element-wise tables to that, on every element type it takes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial, wraps
from typing import Any

import numpy as np

from irscatter.ops.common import threads

# Elements a block: its f64 temporaries (512 KiB each) stay in a core's L2 cache or near it, and
# a split kernel's two parts, which take the GIL at each numpy call of a block, seldom wait
# for it (blocks of 16 K elements left Exp and Mish of a million elements 1.6 to 1.8 times as slow).
BLOCK = 1 << 16
SMALLEST = 1 << 16  # elements below which the kernel runs on the whole array at once
PROBE = 16  # elements `elementwise` computes first, for the output's type
# What one element of a kernel weighs against a multiply-add when choosing the parts: an
# element-wise kernel does a few passes, some through a transcendental function.
ELEMENT_WORK = 16
# A formula of some ten numpy passes with an exponential (Gelu's tanh form, Sigmoid): worth a
# second core from 2^18 elements on. Each numpy call of a block takes the GIL, which the two
# parts then pass to each other: Gelu's tanh form over 3 x 2^16 elements took 430 us in parts
# against 375 in one call, over 6 x 2^16 690 against 1080.
PASSES_WORK = 16
# scipy's f64 error function takes about 20 ns an element, some thousand times a BLAS
# multiply-add: a kernel through it is worth both cores from `SMALLEST` elements on.
SPECIAL_FUNCTION_WORK = 1024
# An element of a kernel over rows (`by_rows`: Softmax's reductions and passes): split from 2^15
# elements on, where two parts of an attention's softmax already took less than one call.
ROW_ELEMENT_WORK = 128
# An element of a binary arithmetic ufunc (`binary`): one pass, bound by memory. Two parts of an
# Add took less than the whole from 2^17 elements on; below, a part's hand-over costs more.
BINARY_ELEMENT_WORK = 32
# Elements below which a binary op's input is not worth asking `binary` about (a layer's one
# test before its kernel, where most layers are small).
BINARY_SMALLEST = 1 << 17

Kernel = Callable[..., np.ndarray]


def by_blocks(kernel: Kernel | None = None, *, work: int = ELEMENT_WORK) -> Any:
    """`kernel` (of one array, and keyword attributes) run by `elementwise`, each element
    weighing `work` multiply-adds (`by_blocks(work=...)` as a decorator with a weight): for
    kernels whose temporaries cost more than the pass of a cheap one (a transcendental
    function, a wider compute type). A cheap kernel (Abs, Relu) stays a whole-array call: per
    block, numpy's call overhead costs more than the cache saves, and one core already keeps up
    with memory."""
    if kernel is None:
        return partial(by_blocks, work=work)

    @wraps(kernel)
    def blocked(x: np.ndarray, **attributes: object) -> np.ndarray:
        return elementwise(partial(kernel, **attributes) if attributes else kernel, x, work)

    return blocked


def elementwise(kernel: Kernel, x: np.ndarray, work: int = ELEMENT_WORK) -> np.ndarray:
    """kernel(x) for a kernel that computes each output element from the input element at its
    position alone, with an output of x's shape: by blocks and parts when `x` is large (`work`:
    an element's weight in multiply-adds, for `threads.parts`)."""
    if x.size < SMALLEST or not x.flags.c_contiguous:
        return kernel(x)
    flat = x.reshape(-1)
    # The output's type, from a few elements: a first block made here would be work the parts
    # wait for (a third of a decoder's Gelu of 2^17.6 elements).
    probe = np.asarray(kernel(flat[:PROBE]))
    if probe.shape != (PROBE,):  # not element-wise after all: the kernel's own whole-array call
        return kernel(x)
    out = np.empty(flat.size, probe.dtype)
    parts = threads.spans(flat.size, threads.parts(flat.size * work))
    threads.run([partial(_blocks, kernel, flat, out, lo, hi) for lo, hi in parts])
    return out.reshape(x.shape)


def _blocks(kernel: Kernel, x: np.ndarray, out: np.ndarray, first: int, last: int) -> None:
    """out = kernel(x) over elements first..last - 1, BLOCK at a time (the parts cut elements,
    not blocks: a few blocks would share out unevenly)."""
    for start in range(first, last, BLOCK):
        end = min(start + BLOCK, last)
        out[start:end] = kernel(x[start:end])


def by_rows(kernel: Callable[[np.ndarray, np.ndarray], None], x: np.ndarray, out: np.ndarray,
            work: int | None = None) -> None:
    """kernel(x, out) for a kernel that fills each row of `out` (its last axis) from the same row
    of `x` alone, through reductions along that axis and element-wise passes (Softmax): on the
    thread policy's parts when `x` is large, each part a block of whole rows. `x` and `out` have
    one shape, and `out` is C-contiguous. `work`: an element's weight for `threads.parts`
    (`ROW_ELEMENT_WORK` by default).

    Bits. numpy reduces a row lying contiguous in memory with the same loop, in the same order,
    whichever rows lie around it; a part's rows are such rows, so each sums as in one call."""
    weight = ROW_ELEMENT_WORK if work is None else work
    count = threads.parts(x.size * weight) if x.ndim > 1 and x.flags.c_contiguous else 1
    spans = threads.spans(math.prod(x.shape[:-1]), count)
    if len(spans) <= 1:
        kernel(x, out)
        return
    rows, targets = x.reshape(-1, x.shape[-1]), out.reshape(-1, x.shape[-1])
    threads.run([partial(kernel, rows[lo:hi], targets[lo:hi]) for lo, hi in spans])


def binary(ufunc: np.ufunc, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ufunc(a, b) with numpy's broadcasting, for two arrays of one element type: on the thread
    policy's parts when the output is large, each part a block along one axis of the output
    longer than one (the one whose elements lie furthest apart in it, so that a block is one run
    of its memory), and each input cut along that axis where it has it (a broadcast input goes
    whole to every part). An element's bits are the ufunc's wherever it sits (see the module's
    docstring). The output is laid out as numpy lays out the ufunc's own: C-contiguous for
    C-contiguous inputs, else as numpy's iterator allocates it for these inputs (`_laid_out`),
    since a later reduction's order (and bits) follows that layout: a residual Add of a
    Transpose's view keeps its layout."""
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        return ufunc(a, b)  # numpy's own error
    size = math.prod(shape)
    count = threads.parts(size * BINARY_ELEMENT_WORK)
    if count == 1 or size == 0 or max(shape, default=1) == 1:
        return ufunc(a, b)
    dtype = np.result_type(a, b)
    out = np.empty(shape, dtype) if a.flags.c_contiguous and b.flags.c_contiguous else _laid_out(a, b, dtype)
    axis = max((i for i, extent in enumerate(shape) if extent > 1), key=lambda i: abs(out.strides[i]))
    spans = threads.spans(shape[axis], count)
    rank = len(shape)
    threads.run([partial(ufunc, block_of(a, axis, lo, hi, rank), block_of(b, axis, lo, hi, rank),
                         out=block_of(out, axis, lo, hi)) for lo, hi in spans])
    return out


def _laid_out(a: np.ndarray, b: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An uninitialized output for ufunc(a, b), laid out as numpy's ufunc would lay out its
    own: numpy's iterator allocates it as the ufunc's does (the operands' memory order, `K`),
    which tests/test_blocks.py holds to the ufunc's layout on transposed, reversed and
    Fortran-ordered inputs, broadcast or not."""
    return np.nditer([a, b, None], flags=["zerosize_ok", "refs_ok"], order="K",
                     op_flags=[["readonly"], ["readonly"], ["writeonly", "allocate", "no_subtype"]],
                     op_dtypes=[a.dtype, b.dtype, dtype]).operands[2]


def block_of(x: np.ndarray, axis: int, lo: int, hi: int, rank: int | None = None) -> np.ndarray:
    """x's block [lo, hi) along axis `axis` of a broadcast of rank `rank` (x's own by default),
    or x itself where it broadcasts along that axis (it has no such axis, or it is of extent 1)."""
    own = axis - ((x.ndim if rank is None else rank) - x.ndim)
    if own < 0 or x.shape[own] == 1:
        return x
    return x[(slice(None),) * own + (slice(lo, hi),)]
