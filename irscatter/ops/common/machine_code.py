"""The machine code of chosen compiled loops, kept on disk and loaded without numba.

A compiled loop (numba) is several times as fast as numpy's passes, but the first one a process
runs waits for numba's import and its type system, most of a second, which is longer than many
models' whole first run: so a layer's first call takes numpy's path (`accel.loads`). Where a
process has used a loop through numba, the loop is kept (`keep`): a C-callable version of it (a
numba `cfunc` around the same loop) is compiled to machine code for this processor and written
under the cache directory, as a shared library where a C compiler is there to link one (loaded
by ctypes in a few milliseconds) and always as an object file (loaded by llvmlite, which numba
installs, in some tens of milliseconds, most of them its import). A later process's calls load
it (`load`) and call it through ctypes, which lets go of the GIL as numba's `nogil` loops do.

The results are the loop's: the code is what LLVM makes of the module numba made of the same
source, with the same operations in the same order (and the same fused multiply-adds, for a loop
that asks for them), for the same processor. A loop is kept under a key of its sources' text and
of the processor (its vendor, family, model and the features the kernel lists); any change makes
another key, and the next process that uses the loop through numba keeps it again (the folder
holds the latest few versions of each loop).

What the code calls: numba's C-callable wrapper has a path for an exception raised inside the
loop, which calls numba's runtime and Python's C API. The loops kept here raise nothing (no
allocation, no bounds checks, integer divisions by strides of at least 1), so that path is never
taken; numba's runtime functions it names (`RUNTIME_SYMBOLS`) are defined inside the module as
traps, private to it, so that the code needs nothing of numba's. Python's functions are the
running interpreter's. A file is written whole and renamed into place, with its digest in the
`.json` written last: a file that does not match its digest, or cannot be read, is ignored (the
loop's other paths run, as without it).

Where: `probe_cache`'s directory (`IRSCATTER_CACHE_DIR`, empty for nowhere), under
`machine-code/`; Linux only. `IRSCATTER_BACKEND=numpy` uses none of this.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irscatter.ops.common import probe_cache

FOLDER = "machine-code"
# Versions of a loop kept (sources or processors: the latest), so that two installations that
# share the folder do not remove each other's.
KEPT_VERSIONS = 4
# What numba's C-callable wrapper calls on its exception path (see the module's docstring):
# defined inside the kept code as private traps (`_without_runtime`).
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


# The modules of numba's loops that keep some (each has a `keep_loops()`).
KEEPERS = ("irscatter.ops.activation.gelu_kernels", "irscatter.ops.convolution.depthwise_kernels")

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


def _path(loop: KeptLoop) -> Path | None:
    """Where `loop` is kept for these sources and this processor, without a suffix (None: nowhere)."""
    place, sources = folder(), _sources_digest(loop)
    if place is None or sources is None or not sys.platform.startswith("linux"):
        return None
    return place / f"{loop.name}-{sources}-{_processor_digest()}"


def _load(loop: KeptLoop) -> Any:
    path = _path(loop)
    if path is None or not path.with_suffix(".json").exists():
        return None
    meta = json.loads(path.with_suffix(".json").read_text())
    signature = ctypes.CFUNCTYPE(loop.restype, *loop.argtypes)
    library = path.with_suffix(".so")
    if meta.get("library") and _digest(library) == meta["library"]:
        try:
            return signature((meta["symbol"], ctypes.CDLL(str(library))))
        except (OSError, AttributeError):
            pass  # (a folder that maps nothing executable, an interpreter that exports no C API: the object)
    code = path.with_suffix(".o").read_bytes()
    if hashlib.sha256(code).hexdigest() != meta.get("object"):
        return None
    address = _add_object(code, meta["symbol"], meta["undefined"])
    return signature(address) if address else None


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def keep(loop: KeptLoop, make: Callable[[], Any]) -> None:
    """Writes `make()` (a numba cfunc of `loop`'s signature, compiled only when needed) as
    `loop`'s object file for this processor, and a shared library of it where a C compiler
    links one, unless they are there already or there is nowhere to keep them."""
    path = _path(loop)
    if path is None or path.with_suffix(".json").exists():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    if not os.access(path.parent, os.W_OK):
        return
    compiled = make()
    module = _without_runtime(compiled.inspect_llvm())
    code = _target_machine().emit_object(module)
    undefined = sorted({f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")}
                       | {g.name for g in module.global_variables if g.is_declaration})
    meta = {"symbol": compiled.native_name, "undefined": undefined, "object": hashlib.sha256(code).hexdigest()}
    with contextlib.suppress(OSError):
        probe_cache.write_whole(path.with_suffix(".o"), code, ".kept-")
        meta["library"] = _link(path.with_suffix(".o"), path.with_suffix(".so"))
        probe_cache.write_whole(path.with_suffix(".json"), json.dumps(meta).encode(), ".kept-")  # (last: it says the rest is there)
        _forget_old(loop, path.parent)


def _forget_old(loop: KeptLoop, place: Path) -> None:
    """Removes the files of `loop` beyond the latest KEPT_VERSIONS (other sources, other
    processors), so that the folder does not grow with every change."""
    versions = sorted(place.glob(f"{loop.name}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in versions[KEPT_VERSIONS:]:
        for suffix in (".json", ".o", ".so"):
            with contextlib.suppress(OSError):
                old.with_suffix(suffix).unlink()


def _without_runtime(llvm_ir: str) -> Any:
    """The cfunc's LLVM module with numba's runtime functions it names (`RUNTIME_SYMBOLS`, on the
    exception path it never takes) defined as traps inside it, private to it: its code then
    needs nothing of numba's, only Python's C API."""
    import llvmlite.binding as llvm
    from llvmlite import ir

    module = llvm.parse_assembly(llvm_ir)
    named = [f.name for f in module.functions if f.is_declaration and f.name in RUNTIME_SYMBOLS]
    if named:
        stubs = ir.Module(name="numba runtime stubs")
        stubs.triple = llvm.get_process_triple()
        trap = ir.Function(stubs, ir.FunctionType(ir.VoidType(), []), name="llvm.trap")
        for name in named:
            builder = ir.IRBuilder(ir.Function(stubs, ir.FunctionType(ir.VoidType(), []), name=name).append_basic_block())
            builder.call(trap, [])
            builder.unreachable()
        module.link_in(llvm.parse_assembly(str(stubs)))
        for name in named:
            module.get_function(name).linkage = "internal"
    return module


def _link(code: Path, library: Path) -> str | None:
    """Links the object `code` into the shared library `library` with the C compiler, where there
    is one; its digest, or None."""
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None
    linking = library.with_name(f".{library.name}.{os.getpid()}")
    try:
        done = subprocess.run([compiler, "-shared", "-o", str(linking), str(code)], capture_output=True, timeout=120)
        if done.returncode != 0:
            return None
        os.replace(linking, library)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        with contextlib.suppress(OSError):
            linking.unlink()
    return _digest(library)


def keep_all() -> None:
    """Keeps every loop that can be kept (imports numba): what the first process on a machine to
    use them does, done ahead (`tools/bench_models.py` does it before it measures first runs)."""
    for name in KEEPERS:
        importlib.import_module(name).keep_loops()


def _sources_digest(loop: KeptLoop) -> str | None:
    return _digest_of_sources(loop.sources)


@functools.cache
def _digest_of_sources(sources: tuple[str, ...]) -> str | None:
    """The modules' source text, as a short digest (read once a process)."""
    digest = hashlib.sha256()
    for name in sources:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            return None
        digest.update(Path(spec.origin).read_bytes())
    return digest.hexdigest()[:20]


@functools.cache
def _processor_digest() -> str:
    """This processor: its architecture, and its vendor, family, model and every feature the
    kernel lists for it (/proc/cpuinfo), read without llvmlite, so that a process finds its
    loops before importing it; the code is compiled for these features."""
    found = probe_cache.cpuinfo()
    flags = " ".join(sorted((found.get("flags") or found.get("Features", "")).split()))
    told = [platform.machine(), *probe_cache.processor(), flags]
    return hashlib.sha256(json.dumps(told).encode()).hexdigest()[:20]


def _target_machine() -> Any:
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, reloc="pic", codemodel="default")


def _add_object(code: bytes, symbol: str, undefined: list[str]) -> int:
    """Loads `code` into this process's LLVM engine; the address of `symbol` (0 where a symbol the
    code calls is found nowhere in the process)."""
    import llvmlite.binding as llvm

    if not _engine:
        _engine.append(llvm.create_mcjit_compiler(llvm.parse_assembly(""), _target_machine()))
    if any(llvm.address_of_symbol(name) is None for name in undefined):
        return 0
    engine = _engine[0]
    engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    return engine.get_function_address(symbol)
