"""Opening the files a user names: what kind of file each reader can take.

The `.xml` is read from start to end, so it may be a pipe (`irscatter run <(gunzip -c m.xml.gz)`)
or a device; a named pipe whose writer never starts, or stalls, would block the read for ever, so
the whole of it must be read within the `pipe_wait_seconds` limit. The `.bin` is memory-mapped and `.npz`/`.npy`
inputs are read by seeking, so each of those must be a regular file.

A memory map is a live view of its file: a `.bin` written over in place would change a
compiled model's weights between two runs, and one cut short would kill the process (SIGBUS)
at the next read of a page past its new end. So a model keeps the file it mapped open
(`WeightsFile`), and refuses to run once that file has changed: written to, cut short, or its
status changed (removed, renamed over, its times set back), which a write may hide behind.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import select
import stat
import time
from pathlib import Path
from typing import BinaryIO

import numpy as np

from irscatter.errors import FileAccessError
from irscatter.limits import current as current_limits

_KINDS = ((stat.S_ISFIFO, "a pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def require_regular(path: Path, what: str, why: str) -> None:
    """Raise unless `path` is a regular file (or a link to one); `why` says why it must be."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise FileAccessError(f"{what} not found", file=str(path)) from None
    except OSError as e:
        raise FileAccessError(f"cannot read {what}: {e.strerror}", file=str(path)) from None
    if stat.S_ISDIR(mode):
        raise FileAccessError(f"{what} is a directory", file=str(path))
    if not stat.S_ISREG(mode):
        raise FileAccessError(f"{what} is {file_kind(mode)}, not a regular file: {why}", file=str(path))


class WeightsFile:
    """A weights file, open and memory-mapped (`mapping`), with its size and the times of its last
    write and of its last change of any kind (which no writer can set back: `cp -p` and
    `rsync --inplace -t` set the former) as it was mapped. `check()`, one `os.fstat` of the open
    file, raises once the file differs from that."""

    __slots__ = ("_as_read", "_file", "mapping", "path")

    def __init__(self, path: Path, file: BinaryIO, mapping: object) -> None:
        self.path, self._file, self.mapping = str(path), file, mapping
        self._as_read = _written_state(os.fstat(file.fileno()))

    def check(self) -> None:
        if _written_state(os.fstat(self._file.fileno())) != self._as_read:
            raise _changed(self.path)

    # Whether `read_into` can read (the system has positioned reads into a buffer).
    reads_into = hasattr(os, "preadv")

    def read_into(self, offset: int, target: np.ndarray) -> bool:
        """Fill `target` (a C-contiguous uint8 array) with the file's bytes from `offset` on, by
        positioned reads of the open file: the bytes a Const's view of the mapping holds, with no
        page of the mapping touched. False where the file system takes no positioned reads (the
        caller copies from the mapping then)."""
        view, done = target.data.cast("B"), 0
        while done < len(view):
            try:
                count = os.preadv(self._file.fileno(), [view[done:]], offset + done)
            except OSError as e:
                if e.errno in _NO_POSITIONED_READS:
                    return False
                raise FileAccessError(f"cannot read weights: {e.strerror}", file=self.path) from None
            if count == 0:  # (the file ends before the bytes it had when it was mapped)
                raise _changed(self.path)
            done += count
        return True

    def release(self, offset: int, size: int) -> None:
        """Let go of the mapped pages wholly inside the `size` bytes from `offset` (the system's
        page cache keeps them): a view of them reads them again from the cache if it is ever
        read again. For a weight copied once its view was read, whose pages would otherwise
        count in the process's memory beside the copy."""
        page = mmap.PAGESIZE
        start, end = -(-offset // page) * page, (offset + size) // page * page
        advise = getattr(self.mapping, "madvise", None)
        if end > start and advise is not None and hasattr(mmap, "MADV_DONTNEED"):
            with contextlib.suppress(OSError, ValueError):
                advise(mmap.MADV_DONTNEED, start, end - start)


# What a file system that cannot read at a position answers (it could still be mapped).
_NO_POSITIONED_READS = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ESPIPE})


def _changed(path: str) -> FileAccessError:
    return FileAccessError("the weights file changed since the model was read (written to, cut short, "
                           "removed or replaced): read the model again", file=path, label="weights-changed")


def _written_state(status: os.stat_result) -> tuple[int, int, int]:
    return status.st_size, status.st_mtime_ns, status.st_ctime_ns


def read_stream(path: Path, what: str, most: int) -> bytes:
    """The bytes of `path`, read from start to end, up to `most` of them (OSError as from open()).
    A named pipe is opened without waiting for a writer, and read whole within `pipe_wait_seconds`
    of opening it: a writer that never starts, or stalls after its first bytes, is an error then."""
    if not stat.S_ISFIFO(path.stat().st_mode):
        with path.open("rb") as f:  # read at once when its size is known, else in pieces
            return f.read() if os.fstat(f.fileno()).st_size else _read_pieces(f, most)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return _read_pipe(fd, path, what, most)
    finally:
        os.close(fd)


def _read_pieces(f: BinaryIO, most: int) -> bytes:
    """Up to `most` bytes of `f`, a megabyte at a time (a read of `most` bytes at once would
    allocate all of them first, whatever the file holds: a device has no size to ask)."""
    pieces, total = [], 0
    while total < most and (piece := f.read(min(1 << 20, most - total))):
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)


def _read_pipe(fd: int, path: Path, what: str, most: int) -> bytes:
    wait = current_limits().pipe_wait_seconds
    deadline = time.monotonic() + wait
    pieces: list[bytes] = []
    total = 0
    while total < most:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            state = (f"whose writer did not finish within {wait} seconds, after {total} bytes" if total
                     else f"that nothing wrote into within {wait} seconds")
            raise FileAccessError(f"{what} is a pipe {state} (irscatter.limits: pipe_wait_seconds)", file=str(path),
                                  label="pipe-wait")
        try:
            piece = os.read(fd, min(1 << 20, most - total))
        except BlockingIOError:  # woken with nothing to read after all
            continue
        if not piece:  # the writer closed its end
            break
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)
