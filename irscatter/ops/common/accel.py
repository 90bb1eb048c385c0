"""The optional numba backend of the scatter arithmetic in `irscatter.ops.scatter.core` (`core`
below; the irscatter1 scatters use it too): the same updates, applied in
the same order to every target element, on all cores (`pip install irscatter[fast]`).

Which path runs is chosen per call:

* `IRSCATTER_BACKEND=numpy`: numpy only, as without the extra.
* `IRSCATTER_BACKEND=numba`: numba for every call it covers, whatever its size (what the tests
  use to put small cases through the kernels); an error if numba is not installed.
* unset or `auto` (the default): numba when it can be imported, for calls large enough to gain
  from threads; smaller ones stay in numpy, where nothing needs compiling.

`use("numpy" | "numba" | "auto")` overrides the variable for a block of code (the run context's
`backend`, `ops/context.py`, so one test can run both paths side by side), and `enabled()` tells whether large
scatters go through numba. Other kernels with a compiled loop ask `enabled()` as well: the
decompression of compressed weights (`decompress.py`) and the depthwise convolutions
(`ops/convolution/depthwise_compiled.py`).

Identical bits. Threads never share a target element: the element scatter along an axis runs
`core`'s tiles (whole fibers along the axis, which no update leaves), one tile per thread at a
time, and a row scatter gives each thread a range of target rows, every thread reading all the
updates in index order and applying only those aimed at its own rows. So each element receives
its updates in exactly the row-major order numpy's `ufunc.at` uses, one at a time, in the
dtype of the output (f32 arithmetic stays f32: no fast-math, no reassociation). Where numpy's
choice between two values depends on more than the numbers (equal values of opposite sign, a
NaN), `_combine` spells out the choice numpy's loop makes: `maximum`/`minimum` keep an
accumulated NaN and otherwise take the update unless the accumulator is strictly greater
(smaller), `fmax`/`fmin` the same with a NaN update ignored; see `core`'s module doc for the
three NaN rules. Means divide by the count converted to the output's dtype, as numpy does.
One difference is left: a NaN that a sum, difference or product makes (from infinities of
opposite sign, or from two NaNs meeting) may carry the other sign than numpy's: which operand's
NaN the processor passes on depends on the order the compiled code gives the two operands, and
IEEE 754 leaves a NaN's sign unspecified. It is a NaN on both paths, in the same elements.

Numba is imported only when a call first goes through it, so importing irscatter, and any model
without a large scatter, pays nothing for it. The row and tile kernels are specialized per reduction and
NaN rule (`_specialize`), each pair compiled on its first call, and all are cached on disk
(`cache=True`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from functools import cache

import numpy as np

from irscatter.ops import context

BACKENDS = ("numpy", "numba", "auto")

ENVIRONMENT_VARIABLE = "IRSCATTER_BACKEND"

# In `auto`, calls smaller than these stay in numpy: below them, waking a second thread costs
# about what it saves.
MIN_PARALLEL_UPDATES = 1 << 16  # update elements of one scatter

# The element scatter's tiles are at least this many columns wide where `core` would make them
# narrower (a long axis): measured on W1, 64-column tiles lost to wider ones. Threads still
# own whole tiles, so the order of every element's updates does not change.
MIN_TILE_COLUMNS = 256
# Elements of a layer's output from which its second call (or its first, once numba is set up)
# loads a compiled loop (`loads`): a smaller layer would save microseconds a call, where loading
# numba takes most of a second and some 100 MB once a process.
LOAD_ELEMENTS = 1 << 16


def mode() -> str:
    """The backend asked for: `use`'s, else the environment variable's, else `auto`."""
    chosen = context.current().backend or os.environ.get(ENVIRONMENT_VARIABLE, "").strip().lower() or "auto"
    if chosen not in BACKENDS:
        raise ValueError(f"{ENVIRONMENT_VARIABLE} must be one of {', '.join(BACKENDS)}, not {chosen!r}")
    return chosen


@cache
def available() -> bool:
    """Whether numba can be imported (looked up without importing it)."""
    return importlib.util.find_spec("numba") is not None


def enabled() -> bool:
    """Whether large scatters go through numba."""
    chosen = mode()
    return chosen == "numba" or (chosen == "auto" and available())


def loads(module: str, called: bool, elements: int) -> bool:
    """Whether a layer's call takes the compiled loop of `module` (a module that imports numba):
    numba is to be used, and either the loop is loaded already, or its output has
    `LOAD_ELEMENTS` elements or more and this is the layer's second call or later or a compiled
    loop has run in this process (`warm`), or, whatever its size, this is the layer's second call
    or later in a warm process. A model run once, or a small model, never waits for numba; the
    runs after the first gain the loop. In a warm process another module's loops load from
    numba's cache in milliseconds, once, where a model of many small layers of one kind (a
    decoder's LayerNorms of a few tokens) saves some tens of microseconds a layer every run."""
    if loaded(module):
        return True
    return enabled() and (elements >= LOAD_ELEMENTS and (called or warm()) or called and warm())


# irscatter's modules of compiled loops (each imports numba, and is imported just before its
# loops first run).
COMPILED_MODULES = (
    "irscatter.ops.activation.gelu_kernels",
    "irscatter.ops.common.compiled_hints",
    "irscatter.ops.common.decompress_kernels",
    "irscatter.ops.common.decompress_levels",
    "irscatter.ops.common.softmax_kernels",
    "irscatter.ops.convolution.depthwise_kernels",
    "irscatter.ops.elementwise.bias_kernels",
    "irscatter.ops.normalization.norm_kernels",
    "irscatter.ops.pooling.pool_kernels",
)


def warm() -> bool:
    """Whether one of irscatter's compiled loops has been loaded in this process, the scatters'
    included. The first load sets numba and LLVM up, most of a second; another module's loops
    then load from numba's cache in milliseconds, so a large layer's first call need not leave
    them for its second."""
    return _kernels.cache_info().currsize > 0 or any(name in sys.modules for name in COMPILED_MODULES)


def loaded(module: str) -> bool:
    """Whether numba is to be used and the compiled loop of `module` is loaded already."""
    return enabled() and module in sys.modules


class LoadsOnSecondCall:
    """What a layer (or fused step) with a compiled loop keeps for `loads`: whether it has been
    called, so that its first call takes numpy's path unless the loop is loaded already."""

    called = False

    def takes_compiled(self, module: str, elements: int) -> bool:
        """`loads(module, ...)` for this call, which then counts as made."""
        compiled = loads(module, self.called, elements)
        self.called = True
        return compiled


def forced() -> bool:
    """Whether every call numba covers goes through it, however small."""
    return mode() == "numba"


@contextlib.contextmanager
def use(backend: str) -> Iterator[None]:
    """Run the block with `backend` ("numpy", "numba" or "auto") whatever the environment says."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    with context.using(backend=backend):
        yield


def _worth_it(elements: int) -> bool:
    return forced() or (enabled() and elements >= MIN_PARALLEL_UPDATES)


# --- what the kernels are told -------------------------------------------------------------------

NONE, ADD, SUB, MUL, MAX, MIN, AND, OR, XOR, MEAN = range(10)

_NUMERIC_OPS = {"none": NONE, "sum": ADD, "sub": SUB, "prod": MUL, "max": MAX, "min": MIN,
                "and": AND, "or": OR, "xor": XOR, "mean": MEAN}

_BOOL_OPS = {"none": NONE, "sum": OR, "max": OR, "or": OR, "prod": AND, "min": AND, "and": AND,
             "sub": XOR, "xor": XOR}  # as core's table of logical ufuncs

RULE_NAN, RULE_KEEP, RULE_UPDATE = range(3)

_RULES = {"nan": RULE_NAN, "keep": RULE_KEEP, "update": RULE_UPDATE}

# numpy dtypes the kernels take; f16 and bf16 reach `core` as f32 already.
_SUPPORTED = {np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                    np.uint32, np.uint64, np.float32, np.float64)}


def _opcode(reduction: str, dtype: np.dtype) -> int | None:
    return (_BOOL_OPS if dtype == np.bool_ else _NUMERIC_OPS).get(reduction)


def _covered_opcode(reduction: str, dtype: np.dtype) -> int:
    """`_opcode` for a call `takes_tiles` has accepted, so known to be covered."""
    op = _opcode(reduction, dtype)
    if op is None:
        raise ValueError(f"the fast backend does not cover a {reduction!r} scatter into {dtype}: ask takes_tiles first")
    return op


def _constants(reduction: str, dtype: np.dtype, identity: object) -> np.ndarray:
    """[the reduction's identity, the NaN a NaN update leaves behind], in the output's dtype
    (so the kernels compare and store them without a conversion of their own)."""
    nan = np.nan if dtype.kind == "f" else 0
    return np.array([identity if identity is not None else 0, nan], dtype=dtype)


def _workers() -> int:
    return max(1, _kernels().numba.get_num_threads())


# --- entry points, called by core ----------------------------------------------------------------


def scatter_rows(out: np.ndarray, rows: np.ndarray, updates: np.ndarray, reduction: str, *,
                 use_init_val: bool, incomparable: str, identity: object) -> bool:
    """`core.scatter_rows` through numba, when the backend takes this call; False otherwise
    (nothing was done). `identity` is the reduction's starting value for `use_init_val=False`."""
    op = _opcode(reduction, out.dtype)
    if op is None or out.dtype not in _SUPPORTED or not out.flags.c_contiguous or not _worth_it(updates.size):
        return False  # (a contiguous `out` reshapes to a view: the kernel writes into `out` itself)
    width = out.shape[1] if out.ndim == 2 else 1
    out2 = out.reshape(out.shape[0], width)
    upd2 = np.ascontiguousarray(updates.reshape(len(rows), width), dtype=out.dtype)
    _kernels().specialized(op, _RULES[incomparable]).scatter_rows(
        out2, np.ascontiguousarray(rows, dtype=np.int64), upd2, use_init_val,
        _constants(reduction, out.dtype, identity), out.dtype.kind in "iu", _workers())
    return True


def takes_tiles(reduction: str, dtype: np.dtype, *, tiled: bool) -> bool:
    """Whether `scatter_tiles` takes an element scatter along an axis into `dtype`. `tiled`:
    numpy would tile this call too (in `auto`, only those are taken: the others are small)."""
    return (_opcode(reduction, dtype) is not None and dtype in _SUPPORTED
            and (forced() or (enabled() and tiled)))


def scatter_tiles(source: np.ndarray, out: np.ndarray, indices: np.ndarray, updates: np.ndarray,
                  p_step: int, q_step: int, reduction: str, *, use_init_val: bool, incomparable: str,
                  identity: object) -> None:
    """`core.scatter_along_axis`'s tiles through numba (when `takes_tiles`), the arrays seen as
    (outer, axis, inner) and `out` possibly `source` itself."""
    op = _covered_opcode(reduction, out.dtype)
    inner = source.shape[2]
    if p_step == 1 and q_step < inner:  # wide tiles: see MIN_TILE_COLUMNS
        q_step = min(inner, max(q_step, MIN_TILE_COLUMNS))
    _kernels().specialized(op, _RULES[incomparable]).scatter_tiles(
        np.ascontiguousarray(source, dtype=out.dtype), out, np.ascontiguousarray(indices),
        np.ascontiguousarray(updates, dtype=out.dtype), p_step, q_step, use_init_val,
        _constants(reduction, out.dtype, identity), out.dtype.kind in "iu", _workers())


def parallel_copy(data: np.ndarray) -> np.ndarray:
    """A fresh C-contiguous copy of the C-contiguous `data`, its bytes copied in disjoint chunks
    by numba's threads (whether that pays is `buffers.output_buffer`'s choice).

    Numba's own threads, not a pool of Python threads running `np.copyto`: after a parallel
    kernel numba's threads keep spinning for a while, and a second pool of threads would then
    fight them for the cores."""
    out = np.empty(data.shape, data.dtype)
    _kernels().copy_bytes(data.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8), _workers())
    return out


# --- the kernels: plain Python here, compiled by numba on first use ------------------------------
# `prange` is numba's parallel range once `_kernels` has run; the functions below are never
# called uncompiled.

prange = range


def _combine(acc, update, op, rule, nan):
    """One update folded into one accumulated value, as numpy's ufunc loops do (module doc)."""
    if op == ADD or op == MEAN:
        return acc + update
    if op == SUB:
        return acc - update
    if op == MUL:
        return acc * update
    if op == MAX or op == MIN:
        ahead = acc > update if op == MAX else acc < update
        if rule == RULE_NAN:  # np.maximum: an accumulated NaN stays, a NaN update lands
            return acc if acc != acc or ahead else update
        if rule == RULE_KEEP:  # np.fmax, a NaN already there kept: neither NaN side changes it
            return acc if acc != acc or update != update or ahead else update
        if update != update:  # "update": a NaN lands (as NaN), and the next update replaces it
            return nan
        return update if acc != acc else (acc if ahead else update)
    if op == AND or op == OR or op == XOR:
        return _bitwise(acc, update, op)
    return update  # NONE: the later update wins


def _bitwise(acc, update, op):
    """and/or/xor, of integers and booleans: the only types the schemas allow them on."""
    if op == AND:
        return acc & update
    if op == OR:
        return acc | update
    return acc ^ update


def _divide(total, count, integer):
    return total // count if integer else total / count


def _copy_bytes_kernel(source, target, workers):
    """target[:] = source, thread w copying the w-th of `workers` equal chunks."""
    for w in prange(workers):
        lo, hi = len(source) * w // workers, len(source) * (w + 1) // workers
        target[lo:hi] = source[lo:hi]


def _fold_counting(tile, counts, targets, values, start, size, tq, op, rule, use_init_val, identity, nan):
    """One row of a tile's updates where each element counts what it receives (a mean, or a
    reduction that starts from its identity at the first update)."""
    for b in range(tq):
        r = targets[b]
        if r < 0:
            r += size
        pos = start + r * tq + b
        if counts[pos] == 0 and not use_init_val:
            tile[pos] = identity
        counts[pos] += 1
        tile[pos] = _combine(tile[pos], values[b], op, rule, nan)


def _specialize(op, rule):
    """The row and tile kernels for one reduction `op` and one NaN `rule`, which they hold as
    closure variables: numba compiles those as constants, so each pair gets a loop of its own
    with `_combine`'s choice of arithmetic made at compile time, not once per update element.
    Numba caches a closure on disk under a key that includes the values it closes over, so
    every pair keeps its own cache entry (and only the pairs used are ever compiled)."""

    def scatter_rows_kernel(out, rows, updates, use_init_val, constants, integer, workers):
        """out[rows[i]] folded with updates[i], i in order; thread w owns a range of target rows."""
        n_rows, width = out.shape
        counted = op == MEAN or (op != NONE and not use_init_val)
        counts = np.zeros(n_rows if counted else 0, np.int64)
        identity, nan = constants[0], constants[1]
        for w in prange(workers):
            divisor = np.empty(1, out.dtype)  # one per thread: it holds a count in out's dtype
            lo, hi = n_rows * w // workers, n_rows * (w + 1) // workers
            for i in range(len(rows)):
                r = rows[i]
                if r < lo or r >= hi:
                    continue
                if counted:
                    if counts[r] == 0 and not use_init_val:
                        out[r, :] = identity
                    counts[r] += 1
                for c in range(width):
                    out[r, c] = _combine(out[r, c], updates[i, c], op, rule, nan)
            if op == MEAN:
                for r in range(lo, hi):
                    if counts[r] > 0:
                        divisor[0] = counts[r] + (1 if use_init_val else 0)
                        for c in range(width):
                            out[r, c] = _divide(out[r, c], divisor[0], integer)

    def scatter_tiles_kernel(source, out, indices, updates, p_step, q_step, use_init_val, constants, integer,
                             workers):
        """core.scatter_along_axis's tiles, each copied out of `source`, updated in row-major order
        of its indices and copied into `out`; thread w takes tiles w, w + workers, ..."""
        outer, size, inner = source.shape
        n = indices.shape[1]
        q_tiles = (inner + q_step - 1) // q_step
        n_tiles = ((outer + p_step - 1) // p_step) * q_tiles
        counted = op == MEAN or (op != NONE and not use_init_val)
        identity, nan = constants[0], constants[1]
        capacity = p_step * size * q_step
        for w in prange(min(workers, n_tiles)):
            tile = np.empty(capacity, out.dtype)
            counts = np.empty(capacity if counted else 0, np.int64)
            divisor = np.empty(1, out.dtype)  # holds a count in out's dtype, as numpy divides by
            for t in range(w, n_tiles, min(workers, n_tiles)):
                p0, q0 = (t // q_tiles) * p_step, (t % q_tiles) * q_step
                tp, tq = min(p_step, outer - p0), min(q_step, inner - q0)
                for a in range(tp):  # rows of the tile are short: 1-D slices, not 3-D indexing
                    fibers = source[p0 + a]
                    for r in range(size):
                        tile[(a * size + r) * tq:(a * size + r + 1) * tq] = fibers[r, q0:q0 + tq]
                if counted:
                    counts[:tp * size * tq] = 0
                for a in range(tp):
                    start = a * size * tq
                    for j in range(n):
                        targets = indices[p0 + a, j, q0:q0 + tq]
                        values = updates[p0 + a, j, q0:q0 + tq]
                        if counted:
                            _fold_counting(tile, counts, targets, values, start, size, tq, op, rule, use_init_val,
                                           identity, nan)
                            continue
                        for b in range(tq):  # the hot loop: kept free of the counting branch
                            r = targets[b]
                            if r < 0:  # negatives reach here only where the op wraps them
                                r += size
                            pos = start + r * tq + b
                            tile[pos] = _combine(tile[pos], values[b], op, rule, nan)
                if op == MEAN:
                    for pos in range(tp * size * tq):
                        if counts[pos] > 0:
                            divisor[0] = counts[pos] + (1 if use_init_val else 0)
                            tile[pos] = _divide(tile[pos], divisor[0], integer)
                for a in range(tp):
                    fibers = out[p0 + a]
                    for r in range(size):
                        fibers[r, q0:q0 + tq] = tile[(a * size + r) * tq:(a * size + r + 1) * tq]

    return scatter_rows_kernel, scatter_tiles_kernel


class _Specialized:
    """The compiled row and tile kernels of one (reduction, NaN rule) pair."""

    def __init__(self, kernel, op: int, rule: int) -> None:
        rows, tiles = _specialize(op, rule)
        self.scatter_rows = kernel(rows)
        self.scatter_tiles = kernel(tiles)


class _Compiled:
    """The compiled kernels, and numba itself (for its thread count)."""

    def __init__(self) -> None:
        try:
            import numba
        except ImportError as exc:
            raise ImportError(f"{ENVIRONMENT_VARIABLE}=numba needs numba: pip install 'irscatter[fast]'") from exc
        from numba.extending import overload

        global prange
        prange = numba.prange

        @overload(_bitwise, inline="always")
        def _bitwise_by_type(acc, update, op):  # a float kernel keeps the branch it never takes
            if isinstance(acc, numba.types.Float):
                return lambda acc, update, op: acc
            return lambda acc, update, op: acc & update if op == AND else (acc | update if op == OR else acc ^ update)

        inline = numba.njit(inline="always", cache=True)
        globals()["_combine"] = inline(_combine)
        globals()["_divide"] = inline(_divide)
        globals()["_fold_counting"] = inline(_fold_counting)
        self._kernel = numba.njit(parallel=True, cache=True, nogil=True, error_model="numpy")
        self._by_pair: dict[tuple[int, int], _Specialized] = {}
        self.numba = numba
        self.copy_bytes = self._kernel(_copy_bytes_kernel)

    def specialized(self, op: int, rule: int) -> _Specialized:
        """The kernels for reduction `op` and NaN `rule`, wrapped on first use (and compiled, or
        loaded from numba's cache, on their first call)."""
        if op != MAX and op != MIN:
            rule = RULE_NAN  # only max and min look at the rule: one variant for the others
        pair = (op, rule)
        if pair not in self._by_pair:
            self._by_pair[pair] = _Specialized(self._kernel, op, rule)
        return self._by_pair[pair]


@cache
def _kernels() -> _Compiled:
    return _Compiled()
