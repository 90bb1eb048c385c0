"""Products and decoding of 4-bit codes by looking their values up, on CPUs with AVX-512
(imported only when numba is used, as `decompress_kernels.py`).

A fiber of 4-bit codes has 16 possible values. Sixteen f32 values fill one 512-bit register:
the fiber's are worked out there at once (each nibble's value less the fiber's shift, times
its scale, rounded to f16 by the CPU's conversions where the chain computes in f16), and one
permute instruction (`vpermps`) then looks up sixteen codes, where the arithmetic route
converts every code to f32, subtracts, multiplies and rounds it. numba has no vector type, so
the loops are written in LLVM's IR here: per fiber, its values in a register; per 16 bytes,
the values of the low and of the high nibbles. A product (`_row_dot`) multiplies them by the
activation's elements of even and of odd index and adds them to two registers of 16 lanes in
one fused multiply-add each, as the arithmetic route's loops fuse theirs; the lanes are added
at the end of the row, so only the order of the sums differs. Decoding (`_fibers_decoded`)
interleaves the two and stores them in the codes' order.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from irscatter.ops.common.compiled_hints import ask_wide_vectors
from irscatter.ops.common.decompress_kernels import PREFETCH_BYTES, prefetch

_F32, _I32, _I8, _I64 = ir.FloatType(), ir.IntType(32), ir.IntType(8), ir.IntType(64)
_LANES = 16
_FLOATS, _WORDS, _BYTES = (ir.VectorType(t, _LANES) for t in (_F32, _I32, _I8))


def _vector_at(builder, base, index, vector_type, align):  # pragma: no cover - compiled
    """The vector of `vector_type` stored from element `index` of the scalar pointer `base`."""
    return builder.load(builder.bitcast(builder.gep(base, [index]), vector_type.as_pointer()), align=align)


def _lanes_summed(builder, vector):  # pragma: no cover - compiled
    """The sum of a vector's lanes, halves added to halves."""
    width = _LANES
    while width > 1:
        width //= 2
        low = builder.shuffle_vector(vector, vector, ir.Constant(ir.VectorType(_I32, width), list(range(width))))
        high = builder.shuffle_vector(vector, vector, ir.Constant(ir.VectorType(_I32, width),
                                                                  list(range(width, 2 * width))))
        vector = builder.fadd(low, high)
    return builder.extract_element(vector, ir.Constant(_I32, 0))


class _Fibers:
    """What both loops below share: a function's 512-bit attributes, its arrays' data, and a
    fiber's 16 values in a register."""

    def __init__(self, context, builder, types, values):  # pragma: no cover - compiled
        self.context, self.builder = context, builder
        ask_wide_vectors(builder, required=True)
        self.permute = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_FLOATS, [_FLOATS, _WORDS]),
                                                      "llvm.x86.avx512.permvar.sf.512")
        self.types, self.values = types, values

    def data(self, position, element):  # pragma: no cover - compiled
        """The data of the array argument at `position`, as a pointer to `element`."""
        array = self.context.make_array(self.types[position])(self.context, self.builder, self.values[position])
        return self.builder.bitcast(array.data, element.as_pointer())

    def table(self, nibble_values, shift, scale, to_f16):  # pragma: no cover - compiled
        """A fiber's 16 values: (nibble value - shift) * scale, rounded to f16 by the CPU's
        conversions when the chain computes in f16 (they round as numpy does: `decompress.py`)."""
        builder = self.builder
        exact = builder.fmul(builder.fsub(nibble_values, self._broadcast(shift)), self._broadcast(scale))
        rounded = builder.fpext(builder.fptrunc(exact, ir.VectorType(ir.HalfType(), _LANES)), _FLOATS)
        return builder.select(to_f16, rounded, exact)

    def each_block(self, fibers, half, nibbles, shifts, scales, codes, to_f16):  # pragma: no cover - compiled
        """For each block of 16 bytes of `fibers` fibers of `half` bytes from `codes`, the
        values of its low and of its high nibbles and its byte's index, the IR of the
        caller's loop body emitted between (`shifts` and `scales` point at the first fiber's)."""
        builder = self.builder
        nibble_values = _vector_at(builder, nibbles, ir.Constant(_I64, 0), _FLOATS, 4)
        blocks = builder.udiv(half, ir.Constant(_I64, _LANES))
        with cgutils.for_range(builder, fibers) as fiber:
            table = self.table(nibble_values, builder.load(builder.gep(shifts, [fiber.index])),
                               builder.load(builder.gep(scales, [fiber.index])), to_f16)
            start = builder.mul(fiber.index, half)
            prefetch(builder, builder.gep(codes, [builder.add(start, ir.Constant(_I64, PREFETCH_BYTES))]))
            with cgutils.for_range(builder, blocks) as block:
                at = builder.add(start, builder.mul(block.index, ir.Constant(_I64, _LANES)))
                yield (*self.looked_up(table, codes, at), at)

    def looked_up(self, table, codes, at):  # pragma: no cover - compiled
        """The values of the 16 low and the 16 high nibbles of the bytes at `codes[at]`."""
        builder = self.builder
        words = builder.zext(_vector_at(builder, codes, at, _BYTES, 1), _WORDS)
        low = builder.and_(words, ir.Constant(_WORDS, [15] * _LANES))
        high = builder.lshr(words, ir.Constant(_WORDS, [4] * _LANES))
        return builder.call(self.permute, [table, low]), builder.call(self.permute, [table, high])

    def _broadcast(self, value):  # pragma: no cover - compiled
        builder = self.builder
        single = builder.insert_element(ir.Constant(_FLOATS, None), value, ir.Constant(_I32, 0))
        return builder.shuffle_vector(single, ir.Constant(_FLOATS, None), ir.Constant(_WORDS, [0] * _LANES))


def _row_dot_codegen(context, builder, signature, args):  # pragma: no cover - compiled
    _, row, _, _, _, _, _, fibers, half, to_f16 = args
    shared = _Fibers(context, builder, signature.args, args)
    first_fiber = builder.mul(row, fibers)
    codes = builder.gep(shared.data(0, _I8), [builder.mul(first_fiber, half)])
    shifts, scales = (builder.gep(shared.data(k, _F32), [first_fiber]) for k in (3, 4))
    even_x, odd_x = shared.data(5, _F32), shared.data(6, _F32)
    sums = [cgutils.alloca_once_value(builder, ir.Constant(_FLOATS, [0.0] * _LANES)) for _ in range(2)]
    fused = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_FLOATS, [_FLOATS] * 3), "llvm.fma.v16f32")
    for low, high, at in shared.each_block(fibers, half, shared.data(2, _F32), shifts, scales, codes, to_f16):
        for total, values, x in zip(sums, (low, high), (even_x, odd_x)):
            added = builder.call(fused, [values, _vector_at(builder, x, at, _FLOATS, 4), builder.load(total)])
            builder.store(added, total)
    return _lanes_summed(builder, builder.fadd(builder.load(sums[0]), builder.load(sums[1])))


@intrinsic
def _row_dot(typing_context, packed, row, nibbles, shift, scale, even_x, odd_x, fibers, half, to_f16):  # pragma: no cover - compiled
    """Weight row `row` (its `fibers` fibers of `half` bytes, a multiple of 16, in `packed`)
    times the activation, each fiber's 16 values worked out in a register."""
    index = numba.types.int64
    return (numba.types.float32(packed, index, nibbles, shift, scale, even_x, odd_x, index, index, numba.types.boolean),
            _row_dot_codegen)


@numba.njit(nogil=True, cache=True)
def _nibble_values(sign):  # pragma: no cover - compiled
    """The value of each nibble's bits, its sign bit flipped."""
    nibbles = np.empty(16, np.float32)
    for n in range(16):
        nibbles[n] = np.float32(n ^ sign)
    return nibbles


@numba.njit(nogil=True, cache=True)
def product_levels(packed, sign, shift, scale, fibers, even_x, odd_x, to_f16, out, lo, hi):  # pragma: no cover - compiled
    """`out[r]` for weight rows r in [lo, hi), as `decompress_kernels.product_nibbles` computes
    them, each code's value looked up among its fiber's 16 (see above)."""
    nibbles = _nibble_values(sign)
    half = packed.shape[1]
    for r in range(lo, hi):
        out[r] = _row_dot(packed, r, nibbles, shift, scale, even_x, odd_x, fibers, half, to_f16)


_INTERLEAVED = [lane for pair in zip(range(_LANES), range(_LANES, 2 * _LANES)) for lane in pair]


def _fibers_decoded_codegen(context, builder, signature, args):  # pragma: no cover - compiled
    _, _, _, _, first, count, half, _, to_f16 = args
    shared = _Fibers(context, builder, signature.args, args)
    codes, out = shared.data(0, _I8), shared.data(7, _F32)
    shifts, scales = (builder.gep(shared.data(k, _F32), [first]) for k in (2, 3))
    pairs = ir.VectorType(_F32, 2 * _LANES)
    for low, high, at in shared.each_block(count, half, shared.data(1, _F32), shifts, scales, codes, to_f16):
        # code 2j is byte j's low nibble: the two lookups interleaved, 32 values in order
        values = builder.shuffle_vector(low, high, ir.Constant(ir.VectorType(_I32, 2 * _LANES), _INTERLEAVED))
        target = builder.gep(out, [builder.mul(at, ir.Constant(_I64, 2))])
        builder.store(values, builder.bitcast(target, pairs.as_pointer()), align=4)
    return context.get_dummy_value()


@intrinsic
def _fibers_decoded(typing_context, packed, nibbles, shift, scale, first, count, half, out, to_f16):  # pragma: no cover - compiled
    """Fibers [0, count) of `packed` (each `half` bytes, a multiple of 16) decoded into `out`
    ([count, 2 * half] f32, C-contiguous), their shifts and scales from `first` on."""
    index = numba.types.int64
    return (numba.types.none(packed, nibbles, shift, scale, index, index, index, out, numba.types.boolean),
            _fibers_decoded_codegen)


@numba.njit(nogil=True, cache=True)
def decoded_levels(packed, sign, shift, scale, first, to_f16, out):  # pragma: no cover - compiled
    """As `decompress_kernels.nibbles_decoded`, each code's value looked up among its fiber's 16."""
    _fibers_decoded(packed, _nibble_values(sign), shift, scale, first, packed.shape[0], packed.shape[1], out, to_f16)
