"""MatMuls whose weight is decompressed from Consts alone, as NNCF writes compressed weights,
run without ever holding the decompressed weight whole.

`runtime/folding.py` would keep the decompressed f32 weight: four times an int8 weight's
memory, eight times an int4 one's. Here the chain from the integer Const of codes (u8, i8, u4,
i4, ...) to the MatMul is elementwise (Convert, Subtract, Multiply, Add; a Reshape that keeps
the rows), and its other inputs, zero points and scales, do not vary along the codes' last
axis. So along that axis (a fiber: a row of the weight, or a group of one) each value is a
function of its code alone, and the chain run by its own kernels on every code a fiber may
hold, instead of the codes, gives a table per fiber whose entry at a code has the bits the
chain gives that code. The table is kept at the chain's last type before the Converts that
widen it to the MatMul's (f16 rather than f32, as NNCF writes it); those Converts are run
once on every 16-bit pattern instead.

The usual chain needs no table (`_arithmetic`): a Convert of the codes to f16 (then one Convert
to f32 at the end) or to f32, maybe a Subtract of a zero point, a Multiply by a scale, maybe a
Reshape of the rows, with every zero point an integer within the codes' range and every scale
finite. Its value is then `(code - zero point) * scale` rounded once to the chain's type, which
`ops/common/decompress.py` computes in arithmetic that a compiled loop vectorizes (a lookup is a
gather) from a zero point and a scale per fiber. Numpy's rounding to f16 costs more than the
lookup, so without numba an f16 chain keeps its table.

A run that nothing watches replaces the MatMul's step with `_LookedUp`: the weight is
decompressed a block of rows at a time and each block multiplied by the activation (np.dot, the
BLAS call numpy's matmul makes for one row, which unlike matmul lets go of the GIL).
With one activation row, BLAS's matrix-vector product computes each output from its own weight
row, so a product by blocks of rows has the same bits as the whole product as long as the
blocks and the row count are multiples of `ROW_ALIGN` (its kernels take rows in fours, and
split them between threads in halves; the first such product is made both ways and compared,
and a BLAS that disagrees keeps the whole weight); otherwise, and with several activation rows (the
matrix-matrix kernel's path depends on the block's size), the weight is decompressed whole for
that product and dropped after. The blocks go in a part per core on irscatter's threads under
the thread policy (`ops/common/threads.py`), each part decompressing into its own buffer, BLAS
held to one thread: a block's product has the same bits on whichever thread makes it. Since
decompressing costs more than a multiply-add, weights from `SPLIT_DECODED` elements are split,
in blocks small enough to give each core one. A run
that watches each layer runs the decompression layers as written, as before.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Any, TypeGuard

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common import accel, threads
from irscatter.ops.common.codebook import look_up
from irscatter.ops.common.decompress import decompress, product
from irscatter.ops.common.products import VECTOR_ROWS
from irscatter.ops.matrix.mat_mul import MatMul
from irscatter.runtime.folding import FoldPlan, behind, constant_steps

ELEMENTWISE = frozenset({"Convert", "Subtract", "Multiply", "Add"})
ROW_ALIGN = VECTOR_ROWS  # rows per block, and of the weight, for a product by blocks (see the module doc)
BLOCK_BYTES = 1 << 20  # a looked-up block stays in cache while BLAS reads it
# Weight elements from which a product by blocks is split between the cores: decompressing an
# element costs several multiply-adds, so a smaller weight than `threads.SPLIT_WORK` pays for
# waking a thread.
SPLIT_DECODED = 1 << 18
TABLE_CHUNK = 1 << 21  # table entries computed at once: a large weight's table is not built in one go
ARITHMETIC = True  # whether the chains `_arithmetic` accepts skip their tables (False: tables for all)


@dataclass(eq=False)
class Fused:
    """The MatMul steps replaced (position -> new step), the decompression steps they leave out
    of a plain run, and the weight slots that are therefore not kept."""

    steps: dict[int, Any] = field(default_factory=dict)
    chains: set[int] = field(default_factory=set)
    weights: set[int] = field(default_factory=set)
    cost: int = 0

    def into(self, plan: FoldPlan) -> FoldPlan:
        if not self.steps:
            return plan
        return replace(plan, skipped=plan.skipped | self.chains, replaced=self.steps)


def fuse_compressed(steps: Sequence[Any], ops: Mapping[int, Op], infos: Mapping[int, TensorInfo],
                    consts: Mapping[int, Any], result_slots: set[int], budget: int) -> Fused:
    """The MatMuls whose weight a run can look up by blocks (`infos`: each slot's inferred
    type and shape; `consts`: the Const layer of each Const's slot), in the order they run,
    while their tables fit in `budget` bytes."""
    fused = Fused()
    readers: dict[int, list[int]] | None = None  # (made for the first candidate: most models have none)
    for i, chain in weight_chains(steps, ops, consts):
        step, op = steps[i], ops[steps[i].layer.id]
        if not (isinstance(op, MatMul) and op.attrs.transpose_b and not op.attrs.transpose_a):
            continue
        if readers is None:
            readers = _readers(steps)
        if not _exclusive(steps, chain, i, readers, result_slots):
            continue
        book = _codebook(steps, ops, chain, infos, consts)
        if book is None or fused.cost + book.cost > budget:
            continue
        fused.cost += book.cost
        fused.steps[i] = replace(step, inputs=step.inputs[:1], compute=_LookedUp(op.compute, book),
                                 reuse_slot=None, reuse_input=None)
        fused.chains.update(chain)
        fused.weights.add(step.inputs[1])
    return fused


def _readers(steps: Sequence[Any]) -> dict[int, list[int]]:
    """The positions of the steps that read each slot."""
    readers: dict[int, list[int]] = {}
    for i, step in enumerate(steps):
        for slot in step.inputs:
            readers.setdefault(slot, []).append(i)
    return readers


def weight_chains(steps: Sequence[Any], ops: Mapping[int, Op], consts: Mapping[int, Any]) -> Iterator[tuple[int, list[int]]]:
    """Each MatMul whose weight (its second input) is computed from Consts alone, with the
    positions of the steps that compute it, in the order they run."""
    foldable = constant_steps(steps, lambda step: ops[step.layer.id].foldable, set(consts))
    producer = {slot: i for i in foldable for slot in steps[i].outputs}
    for i, step in enumerate(steps):
        if isinstance(ops[step.layer.id], MatMul) and len(step.inputs) == 2 and step.inputs[1] in producer:
            yield i, sorted(behind(steps, producer, [step.inputs[1]]))


def reads_codes(steps: Sequence[Any], chain: list[int], infos: Mapping[int, TensorInfo],
                consts: Mapping[int, Any]) -> bool:
    """Whether a chain decompresses codes: it reads an integer Const of at most 8 bits."""
    return any(s in consts and _is_code_type(infos.get(s)) for i in chain for s in steps[i].inputs)


def _exclusive(steps: Sequence[Any], chain: list[int], matmul: int, readers: Mapping[int, list[int]],
               result_slots: set[int]) -> bool:
    """Whether the chain's values are read by the chain and the MatMul alone."""
    inside = set(chain) | {matmul}
    return all(slot not in result_slots and set(readers.get(slot, ())) <= inside
               for i in chain for slot in steps[i].outputs)


@dataclass(eq=False)
class _Codebook:
    """A weight [rows, K] as codes [rows * fibers, length] and a table per fiber, built on first
    use by running the chain (`main`: the steps on the codes' path, `side`: those computing
    zero points and scales) on every code."""

    codes_slot: int
    codes_layer: Any
    rows: int
    fibers: int  # per weight row
    length: int  # codes per fiber
    alphabet: np.ndarray  # every code, as the codes' dtype
    side: list[Any]
    main: list[Any]  # elementwise steps, then a Reshape left out (it keeps the rows)
    widening: list[Any]  # trailing Converts from a 16-bit float, run on every pattern instead
    widened_types: tuple[ElementType, ...]  # what each of them gives
    consts: Mapping[int, Any]
    cost: int
    _built: tuple | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def decode(self, first: int, out: np.ndarray) -> None:
        """The weight's fibers [first, first + len(out)) into `out` [fibers, length], f32."""
        codes, table, widen = self.built()
        look_up(codes[first:first + len(out)], table, first, widen, out)

    def built(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(codes [rows * fibers, length], table [rows * fibers, alphabet], widening or None)."""
        if self._built is None:
            with self._lock:
                if self._built is None:
                    self._built = self._build()
        return self._built

    def _build(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        codes = _codes(self.codes_layer, self.rows * self.fibers)
        values = _side_values(self.side, self.consts)
        shape = tuple(self.codes_layer.const_value.shape)
        chunk = max(1, TABLE_CHUNK // (self.fibers * len(self.alphabet)))
        table = None
        for start in range(0, self.rows, chunk):
            part = self._table_rows(values, shape, start, min(start + chunk, self.rows))
            if table is None:
                table = np.empty((self.rows * self.fibers, part.shape[1]), part.dtype)
            table[start * self.fibers:start * self.fibers + len(part)] = part
        assert table is not None  # (a codebook has rows: `_codebook` takes no weight of none)
        return codes, table, _widened(self.widening, self.widened_types) if self.widening else None

    def _table_rows(self, values: dict[int, Any], shape: tuple[int, ...], start: int, stop: int) -> np.ndarray:
        """The tables of weight rows [start, stop): the main steps run on the alphabet, with
        the zero points and scales of those rows."""
        rank = len(shape)
        current: np.ndarray = self.alphabet.reshape((1,) * (rank - 1) + (-1,))
        path = {self.codes_slot}
        for step in self.main:
            if step.layer.type in ELEMENTWISE:  # a Reshape keeps the rows, and the table has no other axis
                current = step.compute(*[current if s in path else _rows_of(values[s], rank, self.rows, start, stop)
                                         for s in step.inputs])
            path.update(step.outputs)
        current = np.broadcast_to(current, (stop - start,) + shape[1:-1] + (len(self.alphabet),))
        current = current.reshape((stop - start) * self.fibers, len(self.alphabet))
        return current.view(np.uint16) if self.widening else current



def _codes(layer: Any, fibers: int) -> np.ndarray:
    """A codes Const as [fibers, length], each code's byte."""
    return layer.const_value.view(np.uint8).reshape(fibers, -1)


def _side_values(side: list[Any], consts: Mapping[int, Any]) -> dict[int, Any]:
    """The Consts' values and those the side steps (zero points, scales) compute from them."""
    values = {slot: layer.const_value for slot, layer in consts.items()}
    for step in side:
        values[step.outputs[0]] = step.compute(*[values[s] for s in step.inputs])
    return values


_WIDENINGS: dict[tuple, np.ndarray] = {}


def _widened(steps: list[Any], key: tuple[ElementType, ...]) -> np.ndarray:
    """The widening Converts run on every f16 bit pattern, once per sequence of the types they
    give (a Convert's result depends on its source and destination types alone)."""
    found = _WIDENINGS.get(key)
    if found is None:
        found = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
        for step in steps:
            found = step.compute(found)
        _WIDENINGS[key] = found = np.ascontiguousarray(found)
        found.flags.writeable = False
    return found


def _rows_of(value: Any, rank: int, rows: int, start: int, stop: int) -> Any:
    """A zero point's or scale's part for weight rows [start, stop): its first axis sliced when
    it spans the rows, as is when it broadcasts along them."""
    if isinstance(value, np.ndarray) and value.ndim == rank and value.shape[0] == rows:
        return value[start:stop]
    return value


def _codebook(steps: Sequence[Any], ops: Mapping[int, Op], chain: list[int], infos: Mapping[int, TensorInfo],
              consts: Mapping[int, Any]) -> _Codebook | _Arithmetic | None:
    """The chain as arithmetic (`_arithmetic`) or as a codebook, or None when it is neither (see the
    module doc)."""
    weight = infos.get(steps[chain[-1]].outputs[0])
    if weight is None or not _static(weight) or weight.etype is not ElementType.f32 or len(weight.shape.ranked_dims) != 2:
        return None
    rows, k = weight.shape.to_tuple()
    read = [s for i in chain for s in steps[i].inputs if s in consts]
    codes = [s for s in read if _is_codes(infos.get(s), rows, k)]
    if len(set(codes)) != 1 or read.count(codes[0]) != 1:
        return None
    codes_slot = codes[0]
    shape = infos[codes_slot].shape.to_tuple()
    path = {codes_slot}
    side: list[Any] = []
    main: list[Any] = []
    for i in chain:
        step = steps[i]
        if any(s in path for s in step.inputs):
            if not _keeps_fibers(step, path, infos, shape, (rows, k), main):
                return None
            main.append(step)
            path.update(step.outputs)
        else:
            side.append(step)
    widening = _trailing_widening(main, infos)
    main = [step for step in main if all(step is not w for w in widening)]
    alphabet = _alphabet(infos[codes_slot].etype)
    if alphabet is None:
        return None
    fibers = math.prod(shape[1:-1])
    read_consts = {s: consts[s] for s in set(read)}
    if ARITHMETIC:
        found = _arithmetic(main, widening, side, read_consts, infos, consts[codes_slot], shape, alphabet)
        if found is not None:
            return found
    cost = rows * fibers * len(alphabet) * (2 if widening else 4)
    if cost >= rows * k * 4:  # a table larger than the weight itself: keeping the weight is cheaper
        return None
    return _Codebook(codes_slot, consts[codes_slot], rows, fibers, shape[-1], alphabet, side, main, widening,
                     tuple(infos[step.outputs[0]].etype for step in widening), read_consts, cost)


@dataclass(eq=False)
class _Arithmetic:
    """A weight [rows, K] as codes [rows * fibers, length] and, per fiber, `sign` plus its zero
    point (`shift`) and its scale, decompressed by arithmetic with the chain's bits
    (`ops/common/decompress.py`)."""

    codes_layer: Any
    rows: int
    fibers: int
    length: int
    sign: int  # the codes' top bit when they are signed, else 0
    shift: np.ndarray
    scale: np.ndarray
    to_f16: bool  # whether the chain computes in f16 (else f32)
    cost: int

    @cached_property
    def codes(self) -> np.ndarray:
        return _codes(self.codes_layer, self.rows * self.fibers)

    def decode(self, first: int, out: np.ndarray) -> None:
        """The weight's fibers [first, first + len(out)) into `out` [fibers, length], f32."""
        decompress(self.codes[first:first + len(out)], self.sign, self.shift, self.scale, first, self.to_f16, out)


def _arithmetic(main: list[Any], widening: list[Any], side_steps: list[Any], consts: Mapping[int, Any],
                infos: Mapping[int, TensorInfo], codes_layer: Any, shape: tuple[int, ...],
                alphabet: np.ndarray) -> _Arithmetic | None:
    """The chain as codes, zero points and scales, when it is a Convert of the codes to f16 (then
    one Convert to f32 at the end) or to f32, maybe a Subtract of a zero point, a Multiply by a
    scale, maybe a Reshape of the rows; every zero point an integer within the codes' range, every
    scale finite (see `ops/common/decompress.py` for why the arithmetic then has the chain's bits)."""
    chain = [step for step in main if step.layer.type != "Reshape"]
    if [step.layer.type for step in chain] not in (["Convert", "Multiply"], ["Convert", "Subtract", "Multiply"]):
        return None
    etype = infos[chain[0].outputs[0]].etype
    widened = [infos[step.outputs[0]].etype for step in widening]
    if (etype, widened) not in ((ElementType.f16, [ElementType.f32]), (ElementType.f32, [])) or any(
            infos[step.outputs[0]].etype is not etype for step in chain):
        return None
    if etype is ElementType.f16 and not accel.enabled():
        return None  # numpy's rounding to f16 costs more than the tables' lookup; compiled loops' less
    values = _side_values(side_steps, consts)
    zero: Any = 0
    for before, step in zip(chain, chain[1:]):
        side = [slot for slot in step.inputs if slot != before.outputs[0]]
        if len(side) != 1 or (step.layer.type == "Subtract" and step.inputs[0] != before.outputs[0]):
            return None
        if step.layer.type == "Subtract":
            zero = values[side[0]]
    per_fiber = shape[:-1] + (1,)
    zero = np.broadcast_to(np.asarray(zero, np.float64), per_fiber).reshape(-1)
    scale = np.broadcast_to(np.asarray(values[side[0]]), per_fiber).reshape(-1)
    signed = bool(alphabet.min() < 0)
    sign = 1 << (int(math.log2(len(alphabet))) - 1) if signed else 0
    if not (np.array_equal(alphabet.astype(np.int64), (np.arange(len(alphabet)) ^ sign) - sign)
            and np.isfinite(scale).all() and np.isfinite(zero).all() and (zero == np.round(zero)).all()
            and alphabet.min() <= zero.min() and zero.max() <= alphabet.max()):
        return None
    shift, factor = (zero + sign).astype(np.float32), scale.astype(np.float32)
    return _Arithmetic(codes_layer, shape[0], len(zero) // shape[0], shape[-1], sign, shift, factor,
                       etype is ElementType.f16, shift.nbytes + factor.nbytes)


def _alphabet(etype: ElementType) -> np.ndarray | None:
    """Every value of `etype`, ordered by the byte that holds it, when those bytes are 0, 1, ...
    (the codes are then their own column of the table)."""
    signed = etype.is_signed
    values = np.arange(-(1 << (etype.bitwidth - 1)) if signed else 0,
                       (1 << (etype.bitwidth - 1)) if signed else (1 << etype.bitwidth)).astype(etype.dtype)
    if values.dtype.itemsize != 1:
        return None
    held = values.view(np.uint8)
    order = np.argsort(held)
    return values[order] if np.array_equal(held[order], np.arange(len(values))) else None


def _static(info: TensorInfo | None) -> TypeGuard[TensorInfo]:
    return info is not None and info.shape.is_static and info.etype is not ElementType.dynamic


def _is_code_type(info: TensorInfo | None) -> TypeGuard[TensorInfo]:
    return _static(info) and info.etype.is_integral and info.etype.bitwidth <= 8


def _is_codes(info: TensorInfo | None, rows: int, k: int) -> bool:
    """An integer Const of at most 8 bits holding the weight's values, its first axis the rows."""
    if not _is_code_type(info):
        return False
    shape = info.shape.to_tuple()
    return len(shape) >= 2 and shape[0] == rows and math.prod(shape[1:]) == k


def _keeps_fibers(step: Any, path: set[int], infos: Mapping[int, TensorInfo], shape: tuple[int, ...],
                  weight: tuple[int, ...], main: list[Any]) -> bool:
    """Whether a step on the codes' path keeps each fiber a function of its codes: an
    elementwise op whose other inputs do not vary along the last axis, with the codes' shape;
    a Reshape of them into the weight's shape; only Converts after that."""
    out = infos.get(step.outputs[0]) if len(step.outputs) == 1 else None
    if out is None or not _static(out):
        return False
    reshaped = any(s.layer.type == "Reshape" for s in main)
    if step.layer.type == "Reshape":
        return not reshaped and step.inputs[0] in path and out.shape.to_tuple() == weight
    if step.layer.type not in ELEMENTWISE or out.shape.to_tuple() != (weight if reshaped else shape):
        return False
    if reshaped:
        return step.layer.type == "Convert"
    for slot in step.inputs:
        if slot in path:
            continue
        info = infos.get(slot)
        if not _static(info):
            return False
        dims = info.shape.to_tuple()
        if len(dims) > len(shape) or (dims and dims[-1] != 1):
            return False
    return sum(s in path for s in step.inputs) == 1


def _trailing_widening(main: list[Any], infos: Mapping[int, TensorInfo]) -> list[Any]:
    """The Converts at the end of the path that widen an f16 value, when the path reaches f16
    before them: the table keeps the f16 value, and they run on every f16 pattern instead."""
    tail: list[Any] = []
    for step in reversed(main):
        if step.layer.type == "Reshape":
            continue
        if step.layer.type != "Convert":
            break
        tail.insert(0, step)
    while tail and infos[tail[0].inputs[0]].etype is not ElementType.f16:
        tail.pop(0)
    return tail


class _LookedUp:
    """The MatMul of an activation by a weight decompressed by blocks of rows (see the module doc)."""

    def __init__(self, matmul: Callable[..., np.ndarray], book: _Codebook | _Arithmetic) -> None:
        self.matmul, self.book = matmul, book
        # Whether this machine's BLAS gives a product by blocks the whole product's bits: asked
        # on the first call that could take blocks (the kernels' path depends on the shapes, not
        # on the values), so that another BLAS or CPU falls back to the whole weight.
        self.blocks_agree: bool | None = None

    def __call__(self, a: np.ndarray, *given: np.ndarray) -> np.ndarray:
        # `given`: the weight as the decompression layers computed it, in a run that watches
        # them without changing any value; it has the bits the product decompresses itself.
        one_row = math.prod(a.shape[:-1]) == 1 and a.dtype == np.float32
        if one_row and isinstance(self.book, _Arithmetic) and accel.enabled():
            return self._in_one_pass(a)
        if given:
            return self.matmul(a, given[0])
        if not one_row or self.book.rows % ROW_ALIGN or self.blocks_agree is False:
            return self._whole(a)
        if self.blocks_agree is None:
            # two blocks' worth of rows, whole and by blocks: the whole weight is never made
            rows = min(self.book.rows, 2 * self._block())
            whole, blocks = self._whole(a, rows), self._by_blocks(a, rows)
            self.blocks_agree = whole.dtype == blocks.dtype and whole.tobytes() == blocks.tobytes()
        return self._by_blocks(a) if self.blocks_agree else self._whole(a)

    def _width(self) -> int:
        return self.book.fibers * self.book.length  # the weight's columns

    def _block(self, rows: int | None = None, count: int = 1) -> int:
        """Rows per block: a block of f32 in cache, and no fewer blocks than `count` parts of
        `rows` where the row count allows."""
        cached = max(ROW_ALIGN, BLOCK_BYTES // (4 * self._width()) // ROW_ALIGN * ROW_ALIGN)
        if rows is None:
            return cached
        return min(cached, max(ROW_ALIGN, -(-rows // (count * ROW_ALIGN)) * ROW_ALIGN))

    def _whole(self, a: np.ndarray, rows: int | None = None) -> np.ndarray:
        rows, fibers = rows or self.book.rows, self.book.fibers
        whole = np.empty((rows, self._width()), np.float32)
        self.book.decode(0, whole.reshape(rows * fibers, self.book.length))
        return self.matmul(a, whole)

    def _in_one_pass(self, a: np.ndarray) -> np.ndarray:
        """One activation row times the weight, decompressed and multiplied in one compiled
        loop, in a part of the rows per core (a row's sum does not depend on the part)."""
        book = self.book
        assert isinstance(book, _Arithmetic)
        out = np.empty(a.shape[:-1] + (book.rows,), np.float32)
        vector, flat = np.ascontiguousarray(a.reshape(-1)), out.reshape(-1)
        count = threads.parts(book.rows * self._width(), SPLIT_DECODED)
        threads.run([partial(product, book.codes, book.sign, book.shift, book.scale, book.fibers, vector,
                             book.to_f16, flat, lo, hi) for lo, hi in threads.spans(book.rows, count)])
        return out

    def _by_blocks(self, a: np.ndarray, rows: int | None = None) -> np.ndarray:
        """The product by blocks of rows, the blocks in a part per core under the thread policy
        (each part decompresses into its own buffer), BLAS held to one thread meanwhile."""
        rows = rows or self.book.rows
        work = rows * self._width()
        count = threads.parts(work, SPLIT_DECODED)
        block = self._block(rows, count)
        starts = range(0, rows, block)
        out = np.empty(a.shape[:-1] + (rows,), np.result_type(a, np.float32))
        spans = threads.spans(len(starts), count)
        with threads.one_blas_thread(work, SPLIT_DECODED):
            threads.run([partial(self._blocks, a, starts[lo:hi], block, rows, out) for lo, hi in spans])
        return out

    def _blocks(self, a: np.ndarray, starts: range, block: int, rows: int, out: np.ndarray) -> None:
        # np.dot rather than the MatMul kernel's np.matmul: the same matrix-vector product (the
        # first call compares the bits with the kernel's), but numpy's matmul holds the GIL for
        # it, so the parts' products would take turns instead of running on both cores.
        book = self.book
        buffer = np.empty((block, self._width()), np.float32)
        vector, flat = a.reshape(-1), out.reshape(-1)
        for start in starts:
            n = min(block, rows - start)
            part = buffer[:n]
            book.decode(start * book.fibers, part.reshape(n * book.fibers, book.length))
            np.dot(part, vector, out=flat[start:start + n])
