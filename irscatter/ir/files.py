"""Opening the files a user names: what kind of file each reader can take.

The `.xml` is read from start to end, so it may be a pipe (`irscatter run <(gunzip -c m.xml.gz)`)
or a device; a named pipe nobody writes into would block the read for ever, so its writer must
start within the `pipe_wait_seconds` limit. The `.bin` is memory-mapped and `.npz`/`.npy`
inputs are read by seeking, so each of those must be a regular file.

A memory map is a live view of its file: a `.bin` written over in place would change a
compiled model's weights between two runs, and one cut short would kill the process (SIGBUS)
at the next read of a page past its new end. So a model keeps the file it mapped open
(`WeightsFile`), and refuses to run once that file has changed: written to, cut short, or its
status changed (removed, renamed over, its times set back), which a write may hide behind.
"""

from __future__ import annotations

import os
import select
import stat
from pathlib import Path
from typing import BinaryIO

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
            raise FileAccessError("the weights file changed since the model was read (written to, cut short, "
                                  "removed or replaced): read the model again", file=self.path, label="weights-changed")


def _written_state(status: os.stat_result) -> tuple[int, int, int]:
    return status.st_size, status.st_mtime_ns, status.st_ctime_ns


def open_stream(path: Path, what: str) -> BinaryIO:
    """`path` opened for reading from start to end. A named pipe is opened without waiting for
    a writer, which then has `pipe_wait_seconds` to start writing (OSError as from open())."""
    if not stat.S_ISFIFO(path.stat().st_mode):
        return path.open("rb")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        wait = current_limits().pipe_wait_seconds
        if not select.select([fd], [], [], wait)[0]:
            raise FileAccessError(f"{what} is a pipe that nothing wrote into within {wait} seconds "
                                  f"(irscatter.limits: pipe_wait_seconds)", file=str(path), label="pipe-wait")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
