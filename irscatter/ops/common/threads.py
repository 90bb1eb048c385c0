"""How the heavy kernels (the convolutions) use the cores: the thread policy.

numpy's BLAS (OpenBLAS) runs a large matrix product on a pool of threads that wait for each other
by spinning. On a machine where another process keeps a core busy, one of those threads is
descheduled while the others spin for it, and a product on two threads takes several times as
long as on one. So a kernel that has a lot of work does it in independent parts (blocks of
output positions, of samples or of channels), runs them on irscatter's own threads, one per
core, and holds BLAS to one thread meanwhile: a part waits on a lock, not by spinning, so a busy
core delays only its own part. The parts write disjoint blocks of one output in the same
arithmetic order as one call would, so the result does not depend on how the work was split.

Policies (`use(name)`, or IRSCATTER_THREADS_POLICY in the environment; `split` by default):

* `split`: BLAS on one thread, large work split into one part per core on irscatter's threads;
* `one`: BLAS on one thread, no split (everything on the caller's thread);
* `blas`: whatever BLAS does on its own (its thread pool), no split: numpy's default.

threadpoolctl sets BLAS's thread count; limiting costs some tens of microseconds, so work
below `SPLIT_WORK` runs as it is, where BLAS would not start its threads anyway. Within a model
run (`holding_for_run`), the first kernel that holds BLAS to one thread keeps it held until the
run ends: each restore to BLAS's own count, and each small product BLAS then threads on its own,
left OpenBLAS's threads spinning for a while after the call, on the cores the next kernel's
parts run on.
"""

from __future__ import annotations

import bisect
import contextvars
import itertools
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from typing import Any

POLICIES = ("split", "one", "blas")
# Multiply-adds (or element passes) below which a kernel runs as it is: a part's thread wakes in
# some tens of microseconds, and BLAS keeps products this small on one thread itself.
SPLIT_WORK = 1 << 22
CORES = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8))

_policy = "split"
_pool: _Helpers | None = None
_blas = None  # threadpoolctl's controller of the BLAS libraries, made on first use
_lock = threading.Lock()
# The limits held until the end of the model run in progress (None: no run holds them).
_run_holds: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("irscatter_blas_holds", default=None)


def use(name: str) -> None:
    """Set the thread policy of this process (one of POLICIES)."""
    global _policy
    if name not in POLICIES:
        raise ValueError(f"unknown thread policy {name!r}; known: {', '.join(POLICIES)}")
    _policy = name


def policy() -> str:
    return _policy


def _from_environment() -> None:
    name = os.environ.get("IRSCATTER_THREADS_POLICY")
    if name:
        try:
            use(name)
        except ValueError as error:
            warnings.warn(f"IRSCATTER_THREADS_POLICY: {error}; keeping the {_policy} policy", stacklevel=2)


_from_environment()


def parts(work: int, least: int | None = None) -> int:
    """Into how many parts a kernel with `work` multiply-adds should split: one per core under
    the `split` policy when the work is at least `least` (a kernel whose unit of work costs
    more than a multiply-add passes a lower bar; by default `SPLIT_WORK`), else 1."""
    return CORES if _policy == "split" and work >= _bar(least) else 1


def _bar(least: int | None) -> int:
    return SPLIT_WORK if least is None else least


def one_blas_thread(work: int, least: int | None = None) -> AbstractContextManager:
    """A context holding BLAS to one thread for a kernel of `work` multiply-adds, under the
    `split` and `one` policies, when the work is at least `least` (by default, large enough
    for BLAS to thread it; a kernel that splits smaller work into parts holds BLAS for them)."""
    if _policy == "blas" or work < _bar(least):
        return nullcontext()
    holds = _run_holds.get()
    with _lock:
        blas = _controller()
        if holds is None:
            return blas.limit(limits=1)
        if not holds:  # held from here to the end of the run
            holds.append(blas.limit(limits=1))
    return nullcontext()


def _controller() -> Any:
    """threadpoolctl's controller of the BLAS libraries, made on first use (under `_lock`)."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController().select(user_api="blas")
    return _blas


def blas_architectures() -> list[str]:
    """The kernels OpenBLAS chose for this CPU (threadpoolctl's `architecture`), per OpenBLAS
    library the thread policy holds."""
    with _lock:
        libraries = list(_controller().lib_controllers)
    return [str(library.architecture) for library in libraries if library.internal_api == "openblas"]


@contextmanager
def holding_for_run() -> Iterator[None]:
    """The scope of one model run: BLAS, once a kernel holds it to one thread, stays held until
    the scope ends (see the module's docstring); a nested run (a body of Loop or If) is part of
    the run around it."""
    if _run_holds.get() is not None:
        yield
        return
    holds: list[Any] = []
    token = _run_holds.set(holds)
    try:
        yield
    finally:
        _run_holds.reset(token)
        for limit in holds:
            limit.restore_original_limits()


class _Helper:
    """A thread that runs the tasks it is handed and says when they are done. The hand-over is a
    pair of plain locks (released by one thread, acquired by the other), which costs a fraction of
    a thread pool's queue, condition and future: a decode step hands out a hundred products of
    a few hundred microseconds each."""

    def __init__(self, index: int) -> None:
        self.start, self.done = threading.Lock(), threading.Lock()
        self.start.acquire()
        self.done.acquire()
        self.tasks: list[tuple[int, Callable[[], None]]] = []
        self.errors: list[tuple[int, BaseException]] = []
        threading.Thread(target=self._serve, name=f"irscatter-kernel-{index}", daemon=True).start()

    def _serve(self) -> None:
        while True:
            self.start.acquire()
            tasks, self.tasks = self.tasks, []
            for position, task in tasks:
                try:
                    task()
                except BaseException as error:  # (handed to the caller, which raises it)
                    self.errors.append((position, error))
            self.done.release()


class _Helpers:
    """One helper per core but the caller's, lent to one caller at a time."""

    def __init__(self, count: int) -> None:
        self.lent = threading.Lock()
        self.helpers = [_Helper(i) for i in range(count)]

    def run(self, tasks: Sequence[Callable[[], None]]) -> None:
        handed = self.helpers[:len(tasks) - 1]
        for position, task in enumerate(tasks[1:], start=1):
            handed[(position - 1) % len(handed)].tasks.append((position, partial(contextvars.copy_context().run, task)))
        for helper in handed:
            helper.start.release()
        errors: list[tuple[int, BaseException]] = []
        try:
            tasks[0]()
        except BaseException as error:
            errors.append((0, error))
        try:
            for helper in handed:
                helper.done.acquire()
        except BaseException:  # (interrupted while a helper works: its locks are no longer in step)
            _forget_helpers()
            raise
        for helper in handed:
            errors += helper.errors
            helper.errors = []
        if errors:
            raise min(errors, key=lambda found: found[0])[1]


def _helpers() -> _Helpers:
    global _pool
    with _lock:
        if _pool is None:
            _pool = _Helpers(CORES - 1)
        return _pool


def _forget_helpers() -> None:
    global _pool
    _pool = None  # a forked child has the helpers' objects but none of their threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


def run(tasks: Sequence[Callable[[], None]]) -> None:
    """Run independent tasks, the first on the caller's thread and the rest on the helpers;
    returns when all are done (re-raising the error of the first task that failed). Each
    helper's task runs in a copy of the caller's context, so it sees the caller's run context
    and numpy's error state. While the helpers work for one caller, another caller (another
    thread's run, or a task that splits its own work) runs its tasks on its own thread."""
    if len(tasks) <= 1 or CORES == 1:
        for task in tasks:
            task()
        return
    helpers = _helpers()
    if not helpers.lent.acquire(blocking=False):
        for task in tasks:
            task()
        return
    try:
        helpers.run(tasks)
    finally:
        helpers.lent.release()


def spans(total: int, count: int) -> list[tuple[int, int]]:
    """`total` split into at most `count` consecutive non-empty ranges of near-equal length."""
    count = max(1, min(count, total))
    bounds = [total * i // count for i in range(count + 1)]
    return [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]


def weighed_spans(weights: Sequence[int], count: int) -> list[tuple[int, int]]:
    """The items of `weights` split into at most `count` consecutive non-empty ranges of
    near-equal total weight (a range of one heavy item may weigh more than a share)."""
    work = list(itertools.accumulate(weights))
    total = work[-1] if work else 0
    ends = [bisect.bisect_left(work, total * i / count) + 1 for i in range(1, count)]
    bounds = sorted({0, *[min(end, len(work)) for end in ends], len(work)})
    return [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]
