"""One case in a process of its own, with a time limit and a memory limit.

The process that runs cases (a worker of the local pool, or a Ray worker) forks a child per
case. The child limits its address space (`RLIMIT_AS`: what it already has mapped plus the
case's budget), runs the case and sends the record back through a pipe; the worker waits
for it, up to the time limit. Forking is cheap (the child starts with irscatter imported and
with the worker's target already running, whose pipes it inherits), and whatever the case
does to its process ends with it:

* no record within the time limit: the child's process group is killed, `hung`;
* `MemoryError` inside the child, or the child killed by SIGKILL (the kernel's OOM killer),
  `out of memory`;
* the child killed by another signal, or exiting without a record, `crashed`, with the last
  lines it wrote to stderr.

The peak memory is the child's own maximum resident size (`wait4`'s rusage), so it is known
for a case that was killed too.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from irscatter.errors import IRError

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass
class Outcome:
    status: str  # "done", "hung", "crashed", "out of memory", "error"
    value: Any = None  # what the function returned, when done
    message: str | None = None
    seconds: float = 0.0
    peak_mb: float | None = None


def isolated(function: Callable[[Any], Any], argument: Any, *, seconds: float, memory_mb: float | None) -> Outcome:
    """`function(argument)` in a forked child within the limits; its value, or what ended it.
    An exception the function raises is an `error` outcome with its message."""
    start = time.monotonic()
    log = tempfile.TemporaryFile()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(function, argument, write_end, log.fileno(), memory_mb)
    os.close(write_end)
    try:
        payload, finished = _read_until(read_end, start + seconds)
    except BaseException:  # interrupted (Ctrl-C reaches the worker, not the case's own group)
        _kill_group(pid)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read_end)
    if not finished:
        _kill_group(pid)
    _, status, usage = os.wait4(pid, 0)
    outcome = _outcome(payload, finished, status, seconds, _stderr_tail(log))
    log.close()
    outcome.seconds = time.monotonic() - start
    outcome.peak_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    return outcome


def _child(function: Callable[[Any], Any], argument: Any, channel: int, log: int, memory_mb: float | None) -> None:
    try:
        os.setpgid(0, 0)  # a group of its own: a hung case is killed with what it started
        faulthandler.disable()  # a crash is the case's result; a dump of Python's stack would only hide its words
        os.dup2(log, 1)
        os.dup2(log, 2)
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        if memory_mb is not None:
            allowed = _mapped_bytes() + int(memory_mb * (1 << 20))
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (allowed if hard == resource.RLIM_INFINITY else min(allowed, hard),
                                                    hard))
        reply: tuple[Any, ...]
        try:
            reply = ("done", function(argument))
        except MemoryError:
            reply = ("out of memory", f"ran out of memory within its limit of {memory_mb:g} MB")
        except IRError as e:  # irscatter refused the model: its message says why
            reply = ("error", f"irscatter: {e}")
        except BaseException as e:  # the case's own failure: its record, not the worker's end
            reply = ("error", f"{type(e).__name__}: {e}", traceback.format_exc(limit=-4))
        try:
            data = pickle.dumps(reply, protocol=5)
        except MemoryError:
            data = pickle.dumps(("out of memory", "ran out of memory sending its record back"))
        view = memoryview(data)
        while view:
            view = view[os.write(channel, view):]
    except BaseException:  # nothing may return into the worker's own code from here
        traceback.print_exc()
    finally:
        os._exit(0)


def _mapped_bytes() -> int:
    """The address space this process has mapped now (Linux); 0 where it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _read_until(fd: int, deadline: float) -> tuple[bytes, bool]:
    """Everything written to `fd` until it closes (True) or the deadline passes (False)."""
    chunks: list[bytes] = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), False
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)


def _kill_group(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            pass


def _outcome(payload: bytes, finished: bool, status: int, seconds: float, tail: str) -> Outcome:
    if not finished:
        return Outcome("hung", message=f"no result within {seconds:g} s; the case was stopped")
    if payload:
        try:
            reply = pickle.loads(payload)
        except Exception:  # a record cut short: the child died while writing it
            reply = None
        if reply is not None:
            if reply[0] == "done":
                return Outcome("done", reply[1])
            return Outcome(reply[0], message=reply[1] + (f"\n{reply[2]}" if len(reply) > 2 else ""))
    said = f"; its last words: {tail}" if tail else ""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number == signal.SIGKILL:
            return Outcome("out of memory", message=f"killed by SIGKILL (the kernel's OOM killer, most likely){said}")
        return Outcome("crashed", message=f"killed by {name}{said}")
    return Outcome("crashed", message=f"exited with status {os.WEXITSTATUS(status)} before giving a result{said}")


def _stderr_tail(log: Any, limit: int = 800) -> str:
    try:
        size = log.seek(0, os.SEEK_END)
        log.seek(max(0, size - limit))
        text = log.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-4:])
