"""A request/response worker process that survives nothing but is always survived.

The parent sends pickled requests over the worker's stdin and reads pickled replies from a
private copy of its stdout (the worker points its own file descriptor 1 at stderr, so that a
native library printing to stdout cannot corrupt the channel). Frames are an 8-byte
little-endian length and a pickle. The worker's stderr goes to a temporary file, whose tail
explains a crash.

What can go wrong, and the `TargetFailure.kind` it becomes:
* `crashed`: the process died (a signal such as SIGSEGV, or an exit) before answering;
* `hung`: no answer within the request's time limit (the process is killed);
* `refused`: the target raised an error of its own (it rejected the model or the inputs);
* `unstable`: the target answered twice for the same inputs and the answers differ (it read
  memory it had not written);
* `unavailable`: the target is not installed or could not start.
A new process is started for the next request after a crash or a hang.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import IO, Any, TypeVar

_HEADER = struct.Struct("<Q")
_MAX_FRAME = 1 << 36  # 64 GiB: a length beyond this is a corrupted channel, not data
_POLL_SECONDS = 0.25


class TargetFailure(Exception):
    """A request the target could not answer; `kind` is crashed, hung, refused, unstable or unavailable."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# --- the worker's side ---------------------------------------------------------------------------


def serve(handle: Any) -> None:
    """Answer requests from stdin until it closes: `handle(request) -> reply` for each."""
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the native code prints goes to stderr, not into the channel
    source = sys.stdin.buffer
    while True:
        header = source.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        (size,) = _HEADER.unpack(header)
        request = pickle.loads(source.read(size))
        try:
            reply = {"ok": True, "value": handle(request)}
        except TargetFailure as e:
            reply = {"ok": False, "kind": e.kind, "message": e.message}
        except Exception as e:  # the target's own error: one request's answer, not the worker's end
            reply = {"ok": False, "kind": "refused", "message": f"{type(e).__name__}: {e}"}
        _write_frame(channel, reply)


def serve_runtime(make_handler: Callable[[], Any], missing: str) -> None:
    """`serve` the handler `make_handler()` builds; when the runtime it imports is not installed,
    every request is answered `unavailable` with `missing` (formatted with the import's `error`),
    so that the parent learns why rather than seeing the worker die."""
    try:
        handler = make_handler()
    except ImportError as e:
        why = missing.format(error=e)

        def handler(request: dict[str, Any]) -> Any:  # noqa: ARG001  (answer every request the same way)
            raise TargetFailure("unavailable", why)
    serve(handler)


def _write_frame(stream: IO[bytes], obj: Any) -> None:
    payload = pickle.dumps(obj, protocol=5)
    stream.write(_HEADER.pack(len(payload)))
    stream.write(payload)
    stream.flush()


# --- the parent's side ----------------------------------------------------------------------------


def module_command(module: str) -> list[str]:
    """The command that runs `module` (one of `irscatter.targets`, or a script's path ending in
    .py that serves with them) as a worker, without the imports of irscatter's own `__init__`
    (the interpreter, the op library, pydantic): a target imports nothing of irscatter's but
    `targets`, and those imports would cost every start of a worker a second or two. The
    package is entered as a bare namespace of its folder."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = (f"runpy.run_path({module!r}, run_name='__main__')" if module.endswith(".py") else
           f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    bootstrap = ("import runpy, sys, types; package = types.ModuleType('irscatter'); "
                 f"package.__path__ = [{folder!r}]; sys.modules['irscatter'] = package; {run}")
    return [sys.executable, "-c", bootstrap]


_Client = TypeVar("_Client", bound="WorkerClient")


class WorkerClient:
    """A runtime's handle on its `WorkerProcess` (`_worker`): closing it ends the process, and
    it closes itself as a context manager."""

    _worker: WorkerProcess

    def close(self) -> None:
        self._worker.close()

    def __enter__(self: _Client) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WorkerProcess:
    """A worker started as `command` (whose program calls `serve`), restarted after it dies or hangs."""

    def __init__(self, command: list[str], *, name: str, timeout: float = 300.0) -> None:
        self.command = command
        self.name = name
        self.timeout = timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self._owner = os.getpid()  # the process that started the worker (a forked child may use it too)

    def request(self, message: dict[str, Any], timeout: float | None = None) -> Any:
        """Send one request and return the worker's value, or raise `TargetFailure`."""
        proc = self._ensure_started()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            _write_frame(proc.stdin, message)
        except (BrokenPipeError, OSError):
            raise self._died("before it read the request") from None
        limit = self.timeout if timeout is None else timeout
        header = self._read_exactly(proc, _HEADER.size, time.monotonic() + limit)
        (size,) = _HEADER.unpack(header)
        if size > _MAX_FRAME:
            self.close()
            raise TargetFailure("crashed", f"{self.name} wrote a corrupted reply ({size} bytes announced)")
        reply = pickle.loads(self._read_exactly(proc, size, time.monotonic() + limit))
        if reply["ok"]:
            return reply["value"]
        raise TargetFailure(reply["kind"], reply["message"])

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # --- internals ---

    def _running(self, proc: subprocess.Popen[bytes]) -> bool:
        """Whether the worker is alive. A process forked from the one that started it cannot
        wait for it (it is not its child, and `poll` would take it for dead): it asks whether
        the process exists, and a dead worker shows as the end of its pipe."""
        if os.getpid() == self._owner:
            return proc.poll() is None
        try:
            os.kill(proc.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True

    def _ensure_started(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._running(self._proc):
            return self._proc
        self.close()
        self._owner = os.getpid()
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._stderr, bufsize=0)
        except OSError as e:
            raise TargetFailure("unavailable", f"could not start {self.name}: {e}") from None
        return self._proc

    def _read_exactly(self, proc: subprocess.Popen[bytes], size: int, deadline: float) -> bytes:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        chunks, need = [], size
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while need:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    proc.kill()
                    proc.wait()
                    self.close()
                    raise TargetFailure("hung", f"{self.name} gave no answer within {self.timeout:g} s and was stopped")
                # Waiting in short slices, so that a worker that died is noticed even while the
                # pipe stays open: a process it forked (a library's helper) may still hold it.
                if not sel.select(min(remaining, _POLL_SECONDS)):
                    if not self._running(proc):
                        raise self._died("before it answered")
                    continue
                chunk = os.read(fd, min(need, 1 << 24))
                if not chunk:
                    raise self._died("before it answered")
                chunks.append(chunk)
                need -= len(chunk)
        return b"".join(chunks)

    def _died(self, when: str) -> TargetFailure:
        proc = self._proc
        code = proc.wait() if proc is not None and os.getpid() == self._owner else None  # (else not ours to wait for)
        tail = self._stderr_tail()
        self.close()
        if code is None:
            how = "ended"
        elif code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        return TargetFailure("crashed", f"{self.name} {how} {when}" + (f"; its last words: {tail}" if tail else ""))

    def _stderr_tail(self, limit: int = 600) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            text = self._stderr.read().decode("utf-8", "replace")
        except OSError:
            return ""
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return " | ".join(lines[-4:])
