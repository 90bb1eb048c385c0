"""The interface every formulation of a forward convolution implements (`Plan`: what it derives
from the filters once, how it computes, how its work splits over irscatter's threads), and what
the plans that sum one tap at a time share (`Taps`). The formulations are in `plans.py` and
`depthwise_compiled.py`.

Work above `threads.SPLIT_WORK` (or a plan's own `split_from`) is split into independent parts
on irscatter's threads, BLAS held to one thread (see `ops/common/threads.py`). How a shape
splits is worked out once, so a shape gives the same result on every call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from functools import partial
from typing import Generic, Protocol, TypeVar

import numpy as np

from irscatter.ops.common import threads

Prepared = TypeVar("Prepared")  # what a plan derives from the filters


class Finish(Protocol):
    """What a caller does to each block of a convolution's output, in place, as soon as a part
    has written it (a fused bias and activation, `runtime/epilogues.py`), while the block is
    still in that part's core's cache: `rows` rows of `width` elements of the output seen flat
    (`flat`, the output [N, G, C_OUT, *out] as one contiguous axis), the first at `start`, each
    `stride` elements after the one before, the first row of channel `first` (counted over the
    groups and their output channels) and each next row of the next channel."""

    def __call__(self, flat: np.ndarray, start: int, stride: int, rows: int, width: int, first: int) -> None: ...


class Plan(Generic[Prepared]):
    """A formulation for one shape: `prepare(w)` derives what it needs from the filters (kept per
    Const by the op), `__call__(x, prepared)` computes. Its work (multiply-adds) goes in blocks,
    which the parts of a split share out (`_run`)."""

    name = "plan"
    work = 0
    blas = True  # whether the blocks call BLAS (and BLAS is held to one thread meanwhile)
    split_from: int | None = None  # the work from which it splits, if not threads.SPLIT_WORK
    finishes = False  # whether `finishing` hands each block of the output to a Finish

    def prepare(self, w: np.ndarray) -> Prepared:
        raise NotImplementedError

    def __call__(self, x: np.ndarray, prepared: Prepared) -> np.ndarray:
        raise NotImplementedError

    def finishing(self, x: np.ndarray, prepared: Prepared, finish: Finish) -> np.ndarray:
        """`self(x, prepared)`, each block of the output handed to `finish` by the part that
        wrote it (for a plan that `finishes`)."""
        raise NotImplementedError

    def _blocks(self, count: int) -> Sequence[tuple[int, ...]]:
        """The blocks of the work when it goes in `count` parts (at least `count` where it can)."""
        raise NotImplementedError

    def _run(self, block: Callable[..., object]) -> None:
        """Calls `block(*b)` for every block b, in parts under the current thread policy. The
        blocks of each part count are worked out once, so a shape always splits alike."""
        least = self.split_from or threads.SPLIT_WORK
        if self.work < least:  # the common small layer: no split, no BLAS limit
            known = self.__dict__.get("_parts")
            if known is not None and 1 in known:
                for b in known[1][0]:
                    block(*b)
                return
        count = threads.parts(self.work, least)
        known = self.__dict__.setdefault("_parts", {})
        with threads.one_blas_thread(self.work) if self.blas else nullcontext():
            if count not in known:  # (with BLAS held: a plan may ask BLAS where cuts keep its bits)
                blocks = self._blocks(count)
                known[count] = [blocks[lo:hi] for lo, hi in threads.spans(len(blocks), count)]
            parts = known[count]
            if len(parts) == 1:
                for b in parts[0]:
                    block(*b)
                return
            threads.run([partial(_each, block, blocks) for blocks in parts])


def _each(block: Callable[..., object], blocks: Sequence[tuple[int, ...]]) -> None:
    for b in blocks:
        block(*b)


class Taps(Plan[Prepared]):
    """One input channel per group (and C_OUT outputs of it): the sum over the taps, one tap at a
    time in row-major order (the order OpenVINO's reference adds them in), each an elementwise
    product of the tap's inputs by its weights, added to the sum: nothing gathered and no
    matrix product, a multiply and an add pass of numpy a tap. Only the inputs of each window
    and the padding's zeros meet the (finite) weights, so an infinite or NaN input reaches only
    its windows, and a padding tap adds 0 * w = 0, as skipping it would; the sum gets a final
    + 0.0, which makes an all -0.0 sum +0.0, as the per-offset kernel's sums from zero are."""

    blas = False

    def __init__(self, x_shape: Sequence[int], w_shape: Sequence[int], dtype: np.dtype, strides: Sequence[int],
                 dilations: Sequence[int], begin: Sequence[int], out_dims: Sequence[int]) -> None:
        self.n, self.g = x_shape[:2]
        self.d, self.kernel = w_shape[1], tuple(w_shape[3:])
        self.in_dims, self.out_dims = tuple(x_shape[3:]), tuple(out_dims)
        self.strides, self.dilations, self.begin = tuple(strides), tuple(dilations), tuple(begin)
        self.dtype = np.dtype(dtype)
        self.taps = math.prod(self.kernel)
        self.work = self.n * self.g * self.d * math.prod(out_dims) * self.taps
