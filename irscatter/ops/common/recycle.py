"""Large output buffers recycled across runs of one compiled model.

A scatter into an input that was not donated first copies that input into an array of its own
(`buffers.output_buffer`, which asks here before it allocates one). For a KV cache of tens of
megabytes a fresh array costs more than the copy: the kernel has to map and zero its pages on
first touch, which takes about as long as the copy itself. A runtime with its own allocator
(onnxruntime's arena) keeps such memory from one run to the next.

irscatter does the same with what it can prove unused: the large arrays a run returned. The
compiled model keeps them (`Recycler.keep`), and a later run may take one back
(`recycled(shape, dtype)`) only when the recycler's own reference is the last one left
(`references.unshared`): the caller has dropped the array, every view of it and every dict
holding it. An array anyone can still reach is never written (`buffers.py` states the whole
rule). The arrays of the last two runs are kept, so a loop written `out = model.run(feeds)`
(which still holds the previous outputs while the next run starts) gets the outputs of the run
before that. What stays mapped after the caller has let go is at most those two runs' large
outputs; `CompiledModel.release_buffers()` lets them go.

The recycler of the run in progress is a field of the run context (`ops/context.py`), as strict
mode's collector is: kernels ask for a buffer without the ops importing the runtime.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np

from irscatter.ops import context
from irscatter.ops.common.references import unshared

# Smaller arrays come from the allocator's free lists, already mapped: nothing to gain.
MIN_BYTES = 1 << 20
RUNS_KEPT = 2


class Recycler:
    """The large outputs of a compiled model's recent runs, for later runs to write into once
    the caller has dropped them. Safe to share between threads running the same model."""

    def __init__(self) -> None:
        self._runs: deque[list[np.ndarray]] = deque(maxlen=RUNS_KEPT)
        self._lock = threading.Lock()

    def keep(self, outputs: Iterable[object]) -> None:
        """Remember the arrays a run returns that are worth recycling: large, owning their
        memory (a view's memory belongs to its base), contiguous and writable."""
        kept = [a for a in outputs if isinstance(a, np.ndarray) and type(a) is np.ndarray and a.nbytes >= MIN_BYTES
                and a.base is None and a.flags.c_contiguous and a.flags.writeable]
        with self._lock:
            if kept or self._runs:
                self._runs.append(kept)

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
        """A kept array of `shape` and `dtype` that nobody else holds any more, removed from the
        recycler (the caller now owns it); None when there is none."""
        with self._lock:
            for run in self._runs:
                for i in range(len(run)):
                    if unshared(run, i) and run[i].shape == shape and run[i].dtype == dtype:
                        return run.pop(i)
        return None

    def release(self) -> None:
        """Forget every kept array (the memory of those nobody holds is freed)."""
        with self._lock:
            self._runs.clear()

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)


@contextmanager
def recycling(recycler: Recycler | None) -> Iterator[None]:
    """Runs inside the block may take buffers from `recycler` (None: from none)."""
    with context.using(recycler=recycler):
        yield


def recycled(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
    """An array of `shape` and `dtype` whose contents are garbage, from the recycler of the run in
    progress; None outside a run, for a small array, or when none is free."""
    recycler: Recycler | None = context.current().recycler
    if recycler is None or np.dtype(dtype).itemsize * math.prod(shape) < MIN_BYTES:
        return None
    return recycler.take(tuple(shape), np.dtype(dtype))
