"""The machine code of chosen compiled loops, kept on disk and loaded without numba.

A compiled loop (numba) is several times as fast as numpy's passes, but the first one a process
runs waits for numba's import and its type system, most of a second, which is longer than many
models' whole first run: so a layer's first call takes numpy's path (`accel.loads`). LLVM's own
binding (llvmlite, which numba is built on and installs) imports in a few tens of milliseconds
and loads machine code it is given in a few more. So where a process has used a loop through
numba, the loop is kept (`keep`): a C-callable version of it (a numba `cfunc` around the same
loop) is compiled to an object file for this processor and written under the cache directory;
a later process's first call loads that file with llvmlite alone (`load`) and calls it through
ctypes, which lets go of the GIL as numba's `nogil` loops do.

The results are the loop's: the object holds the LLVM code numba made of the same source, with
the same operations in the same order (and the same fused multiply-adds, for a loop that asks for
them), compiled for the same processor. A loop is kept under a key of its sources' text, the
processor's name and features, and llvmlite's version; any change makes another key, and the
loop is kept again by the next process that uses it through numba.

What the file may call: numba's C-callable wrapper has a path for an exception raised inside the
loop, which calls numba's runtime (absent without numba) and Python's C API. The loops kept here
raise nothing (numpy's error model, no allocation, no bounds checks), so that path is never
taken; numba's runtime functions are bound to `_unreachable`, which stops the process with a
message rather than jump to nothing. A file whose code calls anything else it cannot find is not
loaded. A file is written whole and renamed into place, with its digest beside it: a file that
does not match its digest, or cannot be read, is ignored (numpy's path runs, as without it).

Where: `probe_cache`'s directory (`IRSCATTER_CACHE_DIR`, empty for nowhere), under
`machine-code/`. `IRSCATTER_BACKEND=numpy` uses none of this.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irscatter.ops.common import probe_cache

FOLDER = "machine-code"
# What numba's C-callable wrapper calls on its exception path (see the module's docstring), bound
# to `_unreachable` where numba has not bound them in this process.
RUNTIME_SYMBOLS = frozenset({"numba_gil_ensure", "numba_gil_release", "numba_do_raise", "numba_unpickle",
                             "numba_runtime_build_excinfo_struct", "NRT_Free", "NRT_MemInfo_call_dtor"})


@dataclass(frozen=True)
class KeptLoop:
    """A loop that may be kept: its file's `name`, the modules whose source text makes its key
    (found without importing them), and its C signature (ctypes types)."""

    name: str
    sources: tuple[str, ...]
    argtypes: tuple[Any, ...]
    restype: Any


_lock = threading.Lock()
_loaded: dict[str, Any] = {}  # name -> the callable, or None where none could be loaded
_engine: list[Any] = []  # llvmlite's execution engine, made once a process


def folder() -> Path | None:
    """Where kept loops live (None: nowhere)."""
    probes = probe_cache.cache_file()
    return None if probes is None else probes.parent / FOLDER


def load(loop: KeptLoop) -> Any:
    """The kept `loop` as a ctypes function, or None where none is kept for this processor and
    these sources (or it cannot be loaded). Looked for once a process."""
    with _lock:
        if loop.name not in _loaded:
            _loaded[loop.name] = None
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError, ImportError, RuntimeError):
                _loaded[loop.name] = _load(loop)
        return _loaded[loop.name]


def loaded(loop: KeptLoop) -> bool:
    """Whether `loop` is loaded in this process already."""
    return _loaded.get(loop.name) is not None


def _load(loop: KeptLoop) -> Any:
    place, sources = folder(), _sources_digest(loop)
    if place is None or sources is None or not any(place.glob(f"{loop.name}-{sources}-*.json")):
        return None  # (nothing kept: llvmlite is not even imported)
    path = place / f"{loop.name}-{sources}-{_processor_digest()}"
    meta = json.loads(path.with_suffix(".json").read_text())
    code = path.with_suffix(".o").read_bytes()
    if meta.get("sha256") != hashlib.sha256(code).hexdigest():
        return None
    address = _add_object(code, meta["symbol"], meta["undefined"])
    if not address:
        return None
    return ctypes.CFUNCTYPE(loop.restype, *loop.argtypes)(address)


def keep(loop: KeptLoop, make: Callable[[], Any]) -> None:
    """Writes `make()` (a numba cfunc of `loop`'s signature, compiled only when needed) as
    `loop`'s object file for this processor, unless it is there already or there is nowhere to
    keep it."""
    place, sources = folder(), _sources_digest(loop)
    if place is None or sources is None:
        return
    path = place / f"{loop.name}-{sources}-{_processor_digest()}"
    if path.with_suffix(".json").exists():
        return
    try:
        place.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    if not os.access(place, os.W_OK):
        return
    import llvmlite.binding as llvm

    compiled = make()
    module = llvm.parse_assembly(compiled.inspect_llvm())
    code = _target_machine().emit_object(module)
    undefined = sorted({f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")}
                       | {g.name for g in module.global_variables if g.is_declaration})
    meta = {"symbol": compiled.native_name, "undefined": undefined, "sha256": hashlib.sha256(code).hexdigest()}
    with contextlib.suppress(OSError):
        _write(path.with_suffix(".o"), code)
        _write(path.with_suffix(".json"), json.dumps(meta).encode())  # (last: it says the object is there)


def _write(path: Path, data: bytes) -> None:
    """`data` into `path`, written whole and renamed into place."""
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=".kept-", delete=False) as file:
        written = file.name
        file.write(data)
    try:
        os.replace(written, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(written)  # (left only where the rename failed)


def _sources_digest(loop: KeptLoop) -> str | None:
    digest = hashlib.sha256()
    for name in loop.sources:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            return None
        digest.update(Path(spec.origin).read_bytes())
    return digest.hexdigest()[:20]


def _processor_digest() -> str:
    """This processor as llvmlite sees it (its name and features) and llvmlite's version."""
    import llvmlite
    import llvmlite.binding as llvm

    told = json.dumps([llvmlite.__version__, llvm.get_process_triple(), llvm.get_host_cpu_name(),
                       llvm.get_host_cpu_features().flatten()])
    return hashlib.sha256(told.encode()).hexdigest()[:20]


def _target_machine() -> Any:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, codemodel="jitdefault")


def _add_object(code: bytes, symbol: str, undefined: list[str]) -> int:
    """Loads `code` into this process's engine; the address of `symbol` (0 where a symbol the code
    calls is found nowhere)."""
    import llvmlite.binding as llvm

    if not _engine:
        _engine.append(llvm.create_mcjit_compiler(llvm.parse_assembly(""), _target_machine()))
    for name in undefined:
        if llvm.address_of_symbol(name) is None:
            if name not in RUNTIME_SYMBOLS:
                return 0
            llvm.add_symbol(name, ctypes.cast(_UNREACHABLE, ctypes.c_void_p).value)
    engine = _engine[0]
    engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    return engine.get_function_address(symbol)


def _stop() -> None:  # pragma: no cover - never called (see the module's docstring)
    sys.stderr.write("irscatter: a kept compiled loop raised an exception, which it cannot report without numba\n")
    sys.stderr.flush()
    os.abort()


_UNREACHABLE = ctypes.CFUNCTYPE(None)(_stop)
