"""Who may write into which array during a run, and the one call a kernel makes to get the array
it writes its result into (`output_buffer`).

Every array a run touches has one owner, and only its owner writes into it:

* **The caller's feeds** belong to the caller and are never written. The run offers a kernel a
  fed array to overwrite only when the caller donated it, and a view of a feed (a Reshape's
  output, a Squeeze's) holds the feed as its base, so it never counts as the run's own either.
* **Donated feeds** (`run(donate=...)`) are handed over: a kernel may write into one when the
  run says so, with `inplace=True` for the op's `inplace_input` (`Step.reuse_slot` in
  `runtime/plan.py`: only when the step is the feed's one reader) or with `written=` for the
  op's `writes_inputs` (`Step.writable`: the positions whose feeds were donated; the kernel
  updates exactly those and works on its own copies of the others). A donated array that
  another feed shares memory with is not treated as donated (`CompiledModel.run`): the other
  input must still read what was fed.
* **The run's intermediates** belong to the run. The run offers `inplace=True` for one when the
  plan says this step is its last reader and `references.unshared` says the run's list of values
  alone holds it and it views no other array. A hook or a record of values turns the offer off,
  since they would see the overwritten input.
* **Consts and kept values** (a Const's cached array, the values of Const-only layers folded
  once per compiled model) are read-only arrays shared by every run. The plan never offers
  them, and `output_buffer` copies a read-only array even when one is offered.
* **Outputs returned to the caller** are the caller's: `runtime.interpreter.caller_owned` copies
  an output that is read-only, views a feed that was not donated, or shares memory with another
  output. The compiled model's recycler (`recycle.py`) keeps a reference to the large ones, and
  a later run takes one back only when `references.unshared` says the recycler's own reference
  is the last: the caller has dropped the array, every view of it and every dict holding it.
* **Recycled buffers**, once taken out of the recycler, belong to the kernel that took them,
  and then to the run as that kernel's output.

The run loop decides what it offers (`runtime.interpreter._keywords`); a kernel decides what it
takes, here. Whether an array is held by one list alone is read off its reference count in one
place, `references.unshared`, called by the run loop on its list of values (in `_keywords`, before
the step's arguments are gathered into a list of their own, which would hold the array once more)
and by the recycler on its list of kept outputs (in `Recycler.take`, under its lock, so two runs
cannot take the same array).

`output_buffer` then decides, in this order: write into the offered input itself; take a
recycled buffer of the same shape and dtype, whose pages are already mapped; or allocate. When
the kernel starts from the input's values (a scatter), they are copied in: into recycled memory
split across the cores when large (`_fill`), into fresh memory by numpy, or by numba's threads
when the fast backend is forced (`accel.parallel_copy`).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from irscatter.ops.common import accel, recycle, threads

# Below this a copy is over before a second thread has woken up.
SPLIT_BYTES = 8 << 20


def output_buffer(data: np.ndarray, dtype: np.dtype | None = None, *, inplace: bool, copy_values: bool = True,
                  any_layout: bool = False) -> np.ndarray:
    """The array of `data`'s shape and `dtype` (data's own when None) a kernel writes its result
    into: `data` itself when the run offered it (`inplace`) and it is writable, of `dtype`, and
    C-contiguous (any layout with `any_layout`, for a kernel that writes through slices or
    indexing); otherwise a C-contiguous array nobody else holds, recycled or fresh, holding
    `data`'s values converted to `dtype` (`copy_values`, what a scatter starts from) or garbage."""
    dtype = data.dtype if dtype is None else np.dtype(dtype)
    if (inplace and data.flags.writeable and data.dtype == dtype
            and (any_layout or data.flags.c_contiguous)):
        return data
    reused = recycle.recycled(data.shape, dtype)
    if reused is not None:
        if copy_values:
            _fill(reused, data)
        return reused
    if not copy_values:
        return np.empty(data.shape, dtype)
    if (accel.forced() and data.dtype == dtype and data.flags.c_contiguous and data.size
            and not dtype.hasobject):  # a byte copy of object pointers would skip their counts
        # A fresh copy is bound by the page faults of its output, which more threads do not
        # speed up, and where another runtime's thread pool shares the process numba's threads
        # fight it for the cores: numba copies only when it is asked for everything.
        return accel.parallel_copy(data)
    return np.array(data, dtype=dtype, order="C", copy=True)


def _fill(target: np.ndarray, source: np.ndarray) -> None:
    """Copy `source` into `target` (a recycled buffer of its shape) as `np.array(source, dtype)`
    converts, split into one range per core when large. Only for memory already mapped: there a
    copy is bound by memory bandwidth, which one core does not exhaust, whereas a fresh buffer is
    bound by its page faults. numpy releases the GIL while it copies."""
    if threads.CORES < 2 or target.nbytes < SPLIT_BYTES or not (target.flags.c_contiguous
                                                                 and source.flags.c_contiguous):
        np.copyto(target, source, casting="unsafe")
        return
    flat_target, flat_source = target.reshape(-1), source.reshape(-1)
    threads.run([partial(np.copyto, flat_target[lo:hi], flat_source[lo:hi], casting="unsafe")
                 for lo, hi in threads.spans(len(flat_target), threads.CORES)])
