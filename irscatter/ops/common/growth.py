"""Arrays that grow along one axis without copying what they already hold: a stateful
decoder's KV cache, which each step's Concat makes one token longer and an Assign keeps for the
next step. Joined by `np.concatenate`, the whole cache is copied at every step, a cost that
grows with the context.

A Concat the plan marks (`Concat.grows`: two inputs, its output a variable's next value) puts
its result in a buffer with room along the axis (`grown`) and returns a read-only view of the
part it fills. When the next step's Concat is handed that view again (the variable's value,
read back, maybe through an identity Gather's view), the new rows are written into the room
and the view handed out is one longer (`appended`). What a view shows never changes: each
buffer records how far its views reach (`used`), and only a first input that reaches exactly
that far may append. A second run from the same earlier value (a variable set back, a run
repeated after a failed one) finds the room claimed and copies into a buffer of its own.

The views are read-only, so nothing writes through them: an output returned to the caller is
copied (`caller_owned`), a kernel offered one as its buffer copies it (`output_buffer`), and an
Assign may keep one as its variable's value without the copy it makes of other arrays
(`holds`). The values are np.concatenate's; the layout differs (a row of the buffer is longer
than a view's), which numpy's products see as the same matrices with the same strides.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from irscatter.limits import tensor_size_problem

# Room a new buffer keeps beyond its first content, as a share of that content (and at least
# MIN_ROOM rows): a regrowth copies the content again, so room in proportion keeps the copies
# to a constant share of a generation's appends.
ROOM_SHARE = 2  # one half
MIN_ROOM = 32


@dataclass
class _Buffer:
    axis: int
    used: int  # how far along the axis the longest view handed out reaches


# Reentrant: a buffer freed while the lock is held (by a collection that an allocation under it
# sets off) calls `_forget` on the same thread.
_lock = threading.RLock()
_buffers: dict[int, _Buffer] = {}  # by id of the buffer, removed when the buffer is freed


def appended(first: np.ndarray, second: np.ndarray, axis: int) -> np.ndarray | None:
    """`first` and `second` joined along `axis`, the rows of `second` written into the room of
    the buffer `first` views, where `first` is a view `grown` or `appended` handed out that
    reaches as far as any (and `second` fits); else None."""
    owner = first.base
    if owner is None or not _fits(first, second, axis):
        return None
    start, end = first.shape[axis], first.shape[axis] + second.shape[axis]
    with _lock:
        record = _buffers.get(id(owner))
        if (record is None or record.axis != axis or record.used != start or end > owner.shape[axis]
                or not _prefix(first, owner, axis)):
            return None
        record.used = end
    owner[_along(axis, start, end, owner.ndim)] = second
    return _view(owner, axis, end)


def grown(first: np.ndarray, second: np.ndarray, axis: int) -> np.ndarray | None:
    """`first` and `second` joined along `axis` in a new buffer with room to grow, as a
    read-only view; None where they do not join as np.concatenate would join them alone (other
    ranks, shapes or types: its error is then the caller's), or where the buffer would pass
    `irscatter.limits`."""
    if not _fits(first, second, axis):
        return None
    start, end = first.shape[axis], first.shape[axis] + second.shape[axis]
    shape = list(first.shape)
    shape[axis] = end + max(end // ROOM_SHARE, MIN_ROOM)
    if tensor_size_problem(shape, first.itemsize) is not None:
        return None  # (room past the limits on a tensor's size: the plain join, as large as the result)
    owner = np.empty(shape, first.dtype)
    owner[_along(axis, 0, start, owner.ndim)] = first
    owner[_along(axis, start, end, owner.ndim)] = second
    key, record = id(owner), _Buffer(axis, end)
    with _lock:
        _buffers[key] = record
    weakref.finalize(owner, _forget, key)
    return _view(owner, axis, end)


def holds(array: np.ndarray) -> bool:
    """Whether `array` is a view `grown` or `appended` handed out (or a view of one): read-only,
    over a buffer nothing else writes but to append past every view."""
    owner = array.base
    return owner is not None and not array.flags.writeable and id(owner) in _buffers


def _forget(key: int) -> None:
    with _lock:
        _buffers.pop(key, None)


def _fits(first: np.ndarray, second: np.ndarray, axis: int) -> bool:
    return first.ndim == second.ndim and first.dtype == second.dtype and 0 <= axis < first.ndim \
        and _alike_beside(first.shape, second.shape, axis)


def _prefix(view: np.ndarray, owner: np.ndarray, axis: int) -> bool:
    """Whether `view` starts where `owner` does and steps through it as `owner` does."""
    return (view.__array_interface__["data"][0] == owner.__array_interface__["data"][0]
            and view.strides == owner.strides and view.dtype == owner.dtype
            and _alike_beside(view.shape, owner.shape, axis))


def _alike_beside(one: tuple[int, ...], other: tuple[int, ...], axis: int) -> bool:
    """Whether two shapes of one rank agree but along `axis`."""
    return all(a == b for d, (a, b) in enumerate(zip(one, other)) if d != axis)


def _along(axis: int, start: int, end: int, ndim: int) -> tuple[slice, ...]:
    return (slice(None),) * axis + (slice(start, end),) + (slice(None),) * (ndim - axis - 1)


def _view(owner: np.ndarray, axis: int, end: int) -> np.ndarray:
    view = owner[_along(axis, 0, end, owner.ndim)]
    view.flags.writeable = False
    return view
