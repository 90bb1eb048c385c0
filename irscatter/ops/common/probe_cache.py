"""What the probes of this machine's BLAS found, kept on disk from one process to the next.

The products' probes (`products.py`: where cuts keep the bits, whether turned products do;
`direct_blas.py`: whether direct calls give numpy's bits) ask the BLAS how its kernels sum, with
products of random values: a noticeable part of a model's first run, in every process. Their answers depend
only on the BLAS library and the kernels it chooses for the processor, so each answer is kept in
a small JSON file under a key made of both: numpy's version and the BLAS it was built with (its
build configuration), and the processor (its architecture, vendor, family and model, which
OpenBLAS chooses its kernels by, and the SIMD features numpy found). Another BLAS, another numpy
or another processor makes another key, and is probed again.

The file lives in `IRSCATTER_CACHE_DIR` (an empty value keeps nothing on disk), else in
`$XDG_CACHE_HOME/irscatter` or `~/.cache/irscatter`. A file that cannot be read, written or
parsed, or holds a value of the wrong kind, is ignored: the probe runs, as without a cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

CACHE_VARIABLE = "IRSCATTER_CACHE_DIR"
FILE_NAME = "blas-probes.json"
MACHINES_KEPT = 8  # keys the file keeps (the latest), so that it never grows

T = TypeVar("T", bool, int)
_lock = threading.Lock()
_answers: dict[str, bool | int] | None = None  # this machine's answers, read once
_key = ""  # this machine's key (`machine_key`), found when they are read


def cached(name: str, kind: type[T], probe: Callable[[], T]) -> T:
    """`probe()`'s answer (of type `kind`), from the file when this machine's BLAS gave it
    before, else probed and kept there."""
    with _lock:
        kept = _machine_answers().get(name)
    if type(kept) is kind:
        return kept  # type: ignore[return-value]
    found = probe()
    with _lock:
        answers = _machine_answers()
        answers[name] = found
        _write(answers)
    return found


def cache_file() -> Path | None:
    """Where the answers are kept (None: nowhere)."""
    chosen = os.environ.get(CACHE_VARIABLE)
    if chosen is not None:
        return Path(chosen) / FILE_NAME if chosen.strip() else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "irscatter" / FILE_NAME


def machine_key() -> str:
    """numpy's BLAS and this processor, as a short digest (see the module's docstring)."""
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        built = [str(blas.get("name")), str(blas.get("version")), str(blas.get("openblas configuration", ""))]
    except (KeyError, TypeError, AttributeError):
        built = []
    features = getattr(np._core._multiarray_umath, "__cpu_features__", {})  # type: ignore[attr-defined]
    told = json.dumps([np.__version__, built, platform.machine(), processor(),
                       sorted(k for k, v in features.items() if v)])
    return hashlib.sha256(told.encode()).hexdigest()[:24]


def processor() -> list[str]:
    """The processor's vendor, family and model (from /proc/cpuinfo where there is one, else
    what `platform` says): two processors with the same features may get other kernels."""
    wanted = ("vendor_id", "cpu family", "model", "model name")
    found = cpuinfo()
    return [found.get(name, "") for name in wanted] if found else [platform.processor()]


@functools.cache
def cpuinfo() -> dict[str, str]:
    """The first processor's fields in /proc/cpuinfo (empty where there is none), read once."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as info:
            for line in info:
                name, _, value = line.partition(":")
                name = name.strip()
                if name and name not in found:
                    found[name] = value.strip()
                if not line.strip() and found:
                    break  # (the first processor's lines)
    return found


def write_whole(path: Path, data: bytes, prefix: str) -> None:
    """`data` into `path`, written to a file of its own beside it (its name from `prefix`) and
    renamed into place, so that a reader never sees half a file."""
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=prefix, delete=False) as file:
        written = file.name
        file.write(data)
    try:
        os.replace(written, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(written)  # (left only where the rename failed)


def _machine_answers() -> dict[str, bool | int]:
    """The answers kept for this machine (an empty dict to fill where there are none)."""
    global _answers, _key
    if _answers is None:
        _answers, _key = {}, machine_key()
        path = cache_file()
        if path is not None:
            with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
                kept = json.loads(path.read_text()).get(_key, {})
                _answers = {k: v for k, v in kept.items() if isinstance(k, str) and type(v) in (bool, int)}
    return _answers


def _write(answers: dict[str, bool | int]) -> None:
    """Keep this machine's answers (read by `_machine_answers`, under its key) in the file (written whole and renamed into place, so that a
    reader never sees half a file), with the other machines' latest."""
    path = cache_file()
    if path is None:
        return
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        try:
            every = json.loads(path.read_text())
            every = every if isinstance(every, dict) else {}
        except (OSError, ValueError):
            every = {}
        every.pop(_key, None)
        every[_key] = dict(answers)
        every = dict(list(every.items())[-MACHINES_KEPT:])
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, json.dumps(every).encode(), ".probes-")


def forget() -> None:
    """Read the file again at the next question (after the cache directory changed)."""
    global _answers
    with _lock:
        _answers = None
