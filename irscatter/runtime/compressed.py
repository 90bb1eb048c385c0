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

A run that nothing watches replaces the MatMul's step with `_LookedUp`:

* One activation row, by arithmetic, with numba: each output row is decompressed and multiplied
  in one compiled loop (`decompress.product`), a part of the rows per core. The loop sums in its
  own vector order, so the product may differ in its last bits from BLAS's by the decompressed
  weight; each value it decompresses has the layers' bits.
* One activation row otherwise: the weight is decompressed a block of rows at a time and each
  block multiplied by the activation (np.dot, the BLAS call numpy's matmul makes for one row,
  which unlike matmul lets go of the GIL), the blocks in a part per core, each part with its
  own buffer, BLAS held to one thread. BLAS's matrix-vector product computes each output from
  its own weight row, so the blocks have the whole product's bits as long as they and the row
  count are multiples of `ROW_ALIGN` (its kernels take rows in fours); the first such product
  is made both ways and compared, and a BLAS that disagrees keeps the whole weight. Since
  decompressing costs more than a multiply-add, weights from `SPLIT_DECODED` elements are split.
* Several activation rows: blocks of `TOKENS_BLOCK_BYTES` of weight rows, each multiplied by the
  MatMul's kernel (the matrix kernel's sums depend on the block's width, so the last bits may
  differ from one product by the whole weight): the whole f32 weight is never made.

A Gather of whole rows of such a weight (a tied embedding reading the output layer's weight)
decompresses the rows it asks for (`_GatheredRows`), so the two share the codes and neither
keeps the f32 weight.

A run that watches each layer runs the decompression layers as written. Unless an observer may
change values (precision emulation), its MatMul is made as the plain run makes it, from the
weight the layers give, so that both runs have the same bits (`watched_step`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeGuard

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common import accel, threads
from irscatter.ops.common.decompress import levels_usable, product, product_levels, product_nibbles, split_pairs
from irscatter.ops.common.products import VECTOR_ROWS
from irscatter.ops.indexing.gather import gather_with_zero_fill
from irscatter.ops.matrix.mat_mul import MatMul
from irscatter.runtime.folding import FoldPlan, behind, constant_steps
from irscatter.runtime.weight_codes import ELEMENTWISE, Arithmetic, Codebook, side_values

ROW_ALIGN = VECTOR_ROWS  # rows per block, and of the weight, for a product by blocks (see the module doc)
BLOCK_BYTES = 1 << 20  # a looked-up block stays in cache while BLAS reads it
TOKENS_BLOCK_BYTES = 1 << 22  # a block of weight rows for a product of several tokens
TOKENS_SPLIT_WORK = 1 << 24  # multiply-adds from which a weight smaller than a block goes in two
# Weight elements from which a product by blocks is split between the cores: decompressing an
# element costs several multiply-adds, so a smaller weight than `threads.SPLIT_WORK` pays for
# waking a thread.
SPLIT_DECODED = 1 << 18
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
                    consts: Mapping[int, Any], result_slots: set[int], budget: int,
                    readers: Mapping[int, list[int]]) -> Fused:
    """The MatMuls whose weight a run can look up by blocks (`infos`: each slot's inferred
    type and shape; `consts`: the Const layer of each Const's slot; `readers`: the steps that
    read each slot, `folding.readers_of`), in the order they run, while their tables fit in
    `budget` bytes."""
    fused = Fused()
    for i, chain in weight_chains(steps, ops, consts):
        step, op = steps[i], ops[steps[i].layer.id]
        if not (isinstance(op, MatMul) and op.attrs.transpose_b and not op.attrs.transpose_a):
            continue
        if i in fused.steps:
            continue  # (a weight that two MatMuls read: taken with the first)
        others = [r for r in readers.get(step.inputs[1], ()) if r != i]
        products = [r for r in others if _same_product(steps[r], ops[steps[r].layer.id], step)]
        gathers = [r for r in others if r not in products and _gathers_rows(steps[r], ops[steps[r].layer.id], step, consts)]
        if len(products) + len(gathers) != len(others) or not _exclusive(steps, chain, [i, *others], readers, result_slots):
            continue
        book = _codebook(steps, ops, chain, infos, consts)
        if book is None or fused.cost + book.cost > budget:
            continue
        fused.cost += book.cost
        for r in (i, *products):
            fused.steps[r] = replace(steps[r], inputs=steps[r].inputs[:1], compute=_LookedUp(op.compute, book),
                                     reuse_slot=None, reuse_input=None)
        for r in gathers:
            fused.steps[r] = replace(steps[r], inputs=steps[r].inputs[1:2], compute=_GatheredRows(book),
                                     reuse_slot=None, reuse_input=None)
        fused.chains.update(chain)
        fused.weights.add(step.inputs[1])
    return fused


def warm_compiled_loops(steps: Iterable[Any]) -> None:
    """Where numba is to be used, loads the compiled loops the products and lookups of compressed
    weights among `steps` take, on a row of each weight, when the model is compiled: importing
    numba and loading a loop from its cache takes most of a second once a process, which the
    first run, a prompt, would otherwise wait for (their first calls take the loops)."""
    if not accel.enabled():
        return
    for step in steps:
        if isinstance(step.compute, _LookedUp):
            step.compute.warm()
        elif isinstance(step.compute, _GatheredRows):
            _decode_a_row(step.compute.book)


def _decode_a_row(book: Codebook | Arithmetic) -> None:
    """Decodes the weight's first row and throws it away (for the loops that does, see above)."""
    if book.rows:
        book.decode(0, np.empty((book.fibers, book.length), np.float32))


def watched_step(step: Any, replacement: Any | None) -> Any:
    """The step a run that watches the layers (and changes no value) takes at a position: a
    MatMul made as a plain run makes it (its bits may differ from BLAS's whole product, see
    `_LookedUp`), fed the weight the decompression layers give; any other step as it is (a
    Gather of rows copies the same values either way)."""
    if replacement is None or not isinstance(replacement.compute, _LookedUp):
        return step
    return replace(step, compute=replacement.compute, reuse_slot=None, reuse_input=None)


def _same_product(step: Any, op: Op, first: Any) -> bool:
    """Whether another reader of a weight multiplies by it as the first MatMul does."""
    return (isinstance(op, MatMul) and op.attrs.transpose_b and not op.attrs.transpose_a
            and len(step.inputs) == 2 and step.inputs[1] == first.inputs[1] and step.inputs[0] != first.inputs[1])


def _gathers_rows(step: Any, op: Op, matmul: Any, consts: Mapping[int, Any]) -> bool:
    """Whether a reader of a MatMul's weight takes whole rows of it (a Gather along the first
    axis, no batch, a Const axis): a tied embedding reads the output layer's weight so."""
    if step.layer.type != "Gather" or len(step.inputs) != 3 or step.inputs[0] != matmul.inputs[1] \
            or step.inputs[1] == matmul.inputs[1] or getattr(op.attrs, "batch_dims", 0) != 0:
        return False
    axis = consts.get(step.inputs[2])
    value = None if axis is None else np.asarray(axis.const_value)
    return value is not None and value.size == 1 and int(value.reshape(-1)[0]) in (0, -2)


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


def _exclusive(steps: Sequence[Any], chain: list[int], users: list[int], readers: Mapping[int, list[int]],
               result_slots: set[int]) -> bool:
    """Whether the chain's values are read by the chain and the weight's users alone."""
    inside = set(chain) | set(users)
    return all(slot not in result_slots and set(readers.get(slot, ())) <= inside
               for i in chain for slot in steps[i].outputs)


def _codebook(steps: Sequence[Any], ops: Mapping[int, Op], chain: list[int], infos: Mapping[int, TensorInfo],
              consts: Mapping[int, Any]) -> Codebook | Arithmetic | None:
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
    return Codebook(codes_slot, consts[codes_slot], rows, fibers, shape[-1], alphabet, side, main, widening,
                     tuple(infos[step.outputs[0]].etype for step in widening), read_consts, cost)


def _arithmetic(main: list[Any], widening: list[Any], side_steps: list[Any], consts: Mapping[int, Any],
                infos: Mapping[int, TensorInfo], codes_layer: Any, shape: tuple[int, ...],
                alphabet: np.ndarray) -> Arithmetic | None:
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
    values = side_values(side_steps, consts)
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
    return Arithmetic(codes_layer, shape[0], len(zero) // shape[0], shape[-1], sign, shift, factor,
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


class _GatheredRows:
    """A Gather of whole rows of a compressed weight (a tied embedding): the rows it asks for
    decompressed, then gathered by the Gather kernel's own rule (negative indices count from
    the end, an index outside gives zeros), the same values the layers as written give."""

    def __init__(self, book: Codebook | Arithmetic) -> None:
        self.book = book

    def __call__(self, indices: np.ndarray) -> np.ndarray:
        rows = self.book.rows
        flat = indices.reshape(-1)
        if flat.dtype.kind == "u":
            valid = flat < rows
            flat = np.where(valid, flat, 0).astype(np.int64)
        else:
            flat = flat.astype(np.int64)
            flat = np.where(flat < 0, flat + rows, flat)
            valid = (flat >= 0) & (flat < rows)
        wanted = np.unique(flat[valid])
        table = np.empty((len(wanted), self.book.fibers * self.book.length), np.float32)
        if len(wanted):
            self.book.decode_rows(wanted, table)
        local = np.where(valid, np.searchsorted(wanted, flat), len(wanted))
        return gather_with_zero_fill(table, local.reshape(indices.shape), 0, 0, "indices")


class _LookedUp:
    """The MatMul of an activation by a weight decompressed by blocks of rows (see the module doc)."""

    def __init__(self, matmul: Callable[..., np.ndarray], book: Codebook | Arithmetic) -> None:
        self.matmul, self.book = matmul, book
        # Whether this machine's BLAS gives a product by blocks the whole product's bits: asked
        # on the first call that could take blocks (the kernels' path depends on the shapes, not
        # on the values), so that another BLAS or CPU falls back to the whole weight.
        self.blocks_agree: bool | None = None

    def __call__(self, a: np.ndarray, *given: np.ndarray) -> np.ndarray:
        # `given`: the weight as the decompression layers computed it, in a run that watches
        # them without changing any value; it has the bits the product decompresses itself.
        one_row = math.prod(a.shape[:-1]) == 1 and a.dtype == np.float32
        if one_row and isinstance(self.book, Arithmetic) and accel.enabled():
            return self._in_one_pass(a)
        if not one_row:
            return self._tokens_by_blocks(a, given[0] if given else None)
        if given:
            return self.matmul(a, given[0])
        if self.book.rows % ROW_ALIGN or self.blocks_agree is False:
            return self._whole(a)
        if self.blocks_agree is None:
            # two blocks' worth of rows, whole and by blocks: the whole weight is never made
            rows = min(self.book.rows, 2 * self._block())
            whole, blocks = self._whole(a, rows), self._by_blocks(a, rows)
            self.blocks_agree = whole.dtype == blocks.dtype and whole.tobytes() == blocks.tobytes()
        return self._by_blocks(a) if self.blocks_agree else self._whole(a)

    def _width(self) -> int:
        return self.book.fibers * self.book.length  # the weight's columns

    def _rows_in(self, size: int) -> int:
        """Whole multiples of `ROW_ALIGN` weight rows of f32 in `size` bytes, at least one."""
        return max(ROW_ALIGN, size // (4 * self._width()) // ROW_ALIGN * ROW_ALIGN)

    def _block(self, rows: int | None = None, count: int = 1) -> int:
        """Rows per block: a block of f32 in cache, and no fewer blocks than `count` parts of
        `rows` where the row count allows."""
        cached = self._rows_in(BLOCK_BYTES)
        if rows is None:
            return cached
        return min(cached, max(ROW_ALIGN, -(-rows // (count * ROW_ALIGN)) * ROW_ALIGN))

    def _whole(self, a: np.ndarray, rows: int | None = None) -> np.ndarray:
        rows, fibers = rows or self.book.rows, self.book.fibers
        whole = np.empty((rows, self._width()), np.float32)
        self.book.decode(0, whole.reshape(rows * fibers, self.book.length))
        return self.matmul(a, whole)

    def _tokens_by_blocks(self, a: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
        """Several activation rows times the weight, a block of weight rows at a time, each
        multiplied by the MatMul's kernel (`_in_parts`; a watching run's weight is cut into the
        same blocks, so both runs give the same bits; the matrix kernel's sums depend on the
        block's width, so these may differ in the last bits from one product by the whole
        weight)."""
        book = self.book
        block, work = self._rows_in(TOKENS_BLOCK_BYTES), math.prod(a.shape[:-1]) * book.rows * self._width()
        if block >= book.rows and work >= TOKENS_SPLIT_WORK and book.rows >= 2 * ROW_ALIGN:
            block = self._block(book.rows, 2)  # a weight of one block's rows, in two: one per core
        if block >= book.rows:
            return self.matmul(a, weight) if weight is not None else self._whole(a)
        out = np.empty(a.shape[:-1] + (book.rows,), np.result_type(a, np.float32))
        tokens, outputs = a.reshape(-1, a.shape[-1]).T, out.reshape(-1, book.rows)

        def multiply(part: np.ndarray, start: int) -> None:
            if a.dtype == np.float32:
                # the block times the tokens, one BLAS call on this part's thread: BLAS ran
                # [n, K] x [K, tokens] faster than [tokens, K] x [K, n] (the weight's rows are
                # then the kernel's long side), and a MatMul kernel would split it again
                outputs[:, start:start + len(part)] = np.matmul(part, tokens).T
            else:
                out[..., start:start + len(part)] = self.matmul(a, part)
        self._in_parts(book.rows, block, work, None, multiply, weight)
        return out

    def _in_one_pass(self, a: np.ndarray) -> np.ndarray:
        """One activation row times the weight, decompressed and multiplied in one compiled
        loop, in a part of the rows per core (a row's sum does not depend on the part)."""
        out = np.empty(a.shape[:-1] + (self.book.rows,), np.float32)
        multiply = self._one_pass(np.ascontiguousarray(a.reshape(-1)), out.reshape(-1))
        count = threads.parts(self.book.rows * self._width(), SPLIT_DECODED)
        threads.run([partial(multiply, lo, hi) for lo, hi in threads.spans(self.book.rows, count)])
        return out

    def _one_pass(self, vector: np.ndarray, flat: np.ndarray) -> Callable[[int, int], None]:
        """`multiply(lo, hi)`: flat[lo:hi] = weight rows lo..hi times `vector`, in one compiled loop."""
        book = self.book
        assert isinstance(book, Arithmetic)
        packed = book.packed
        if packed is not None and levels_usable(book.length):  # 4-bit codes looked up, 16 at a time
            return partial(product_levels, packed, book.sign, book.shift, book.scale, book.fibers,
                           split_pairs(vector), book.to_f16, flat)
        if packed is not None:  # 4-bit codes as the file holds them: half the bytes to read
            return partial(product_nibbles, packed, book.sign, book.shift, book.scale, book.fibers,
                           split_pairs(vector), book.to_f16, flat)
        return partial(product, book.codes, book.sign, book.shift, book.scale, book.fibers, vector,
                       book.to_f16, flat)

    def warm(self) -> None:
        """Takes, on one weight row, the compiled loops this product's calls take: a row decoded
        and, for an arithmetic book, the one-row product (`warm_compiled_loops`)."""
        book = self.book
        _decode_a_row(book)
        if isinstance(book, Arithmetic) and book.rows:
            self._one_pass(np.zeros(self._width(), np.float32), np.empty(book.rows, np.float32))(0, 1)

    def _by_blocks(self, a: np.ndarray, rows: int | None = None) -> np.ndarray:
        """One activation row times the weight by blocks of rows (`_in_parts`). np.dot rather
        than the MatMul kernel's np.matmul: the same matrix-vector product (the first call
        compares the bits with the kernel's), but numpy's matmul holds the GIL for it, so the
        parts' products would take turns instead of running on both cores."""
        rows = rows or self.book.rows
        work = rows * self._width()
        out = np.empty(a.shape[:-1] + (rows,), np.result_type(a, np.float32))
        vector, flat = a.reshape(-1), out.reshape(-1)

        def multiply(part: np.ndarray, start: int) -> None:
            np.dot(part, vector, out=flat[start:start + len(part)])
        self._in_parts(rows, self._block(rows, threads.parts(work, SPLIT_DECODED)), work, SPLIT_DECODED, multiply)
        return out

    def _in_parts(self, rows: int, block: int, work: int, least: int | None,
                  multiply: Callable[[np.ndarray, int], None], weight: np.ndarray | None = None) -> None:
        """`multiply(part, start)` for each block of `block` weight rows of the first `rows`, the
        blocks in a part per core under the thread policy (`work` multiply-adds, split from
        `least`), BLAS held to one thread meanwhile: each part decompresses its blocks into a
        buffer of its own, or cuts them from `weight` (the weight a watching run's layers gave)."""
        starts = range(0, rows, block)
        with threads.one_blas_thread(work, least):
            threads.run([partial(self._blocks, starts[lo:hi], block, rows, multiply, weight)
                         for lo, hi in threads.spans(len(starts), threads.parts(work, least))])

    def _blocks(self, starts: range, block: int, rows: int, multiply: Callable[[np.ndarray, int], None],
                weight: np.ndarray | None) -> None:
        book = self.book
        buffer = np.empty((block, self._width()), np.float32) if weight is None else None
        for start in starts:
            n = min(block, rows - start)
            if weight is not None:
                part = weight[start:start + n]
            else:
                assert buffer is not None
                part = buffer[:n]
                book.decode(start * book.fibers, part.reshape(n * book.fibers, book.length))
            multiply(part, start)
