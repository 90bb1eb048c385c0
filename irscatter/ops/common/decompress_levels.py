"""The product of 4-bit codes by looking their values up, on CPUs with AVX-512 (imported only
when numba is used, as `decompress_kernels.py`).

A fiber of 4-bit codes has 16 possible values. Sixteen f32 values fill one 512-bit register:
the fiber's are worked out there at once (each nibble's value less the fiber's shift, times
its scale, rounded to f16 by the CPU's conversions where the chain computes in f16), and one
permute instruction (`vpermps`) then looks up sixteen codes, where the arithmetic route
converts every code to f32, subtracts, multiplies and rounds it. numba has no vector type, so
the loop over a weight row is written in LLVM's IR here (`_row_dot`): per fiber, its values in
a register; per 16 bytes, the low and the high nibbles
looked up and multiplied by the activation's elements of even and of odd index, summed in two
registers of 16 lanes, whose lanes are added at the end of the row. Each product of a level and
an activation is rounded to f32 before it is added, as in the arithmetic route; only the order
of the sums differs.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

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


def _row_dot_codegen(context, builder, signature, args):  # pragma: no cover - compiled
    packed_type, _, nibbles_type, shift_type, scale_type, even_type, odd_type, _, _, _ = signature.args
    packed, row, nibbles, shift, scale, even, odd, fibers, half, to_f16 = args
    # 512-bit vectors in this function, which LLVM would otherwise split in two on Intel's CPUs
    # (llvmlite's attribute set refuses attributes it does not list; these are written as they are)
    for attribute in ('"prefer-vector-width"="512"', '"min-legal-vector-width"="512"'):
        set.add(builder.function.attributes, attribute)
    permute = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_FLOATS, [_FLOATS, _WORDS]),
                                             "llvm.x86.avx512.permvar.sf.512")

    def data(array_type, value, element):
        return builder.bitcast(context.make_array(array_type)(context, builder, value).data, element.as_pointer())

    def broadcast(value):
        return builder.shuffle_vector(builder.insert_element(ir.Constant(_FLOATS, None), value, ir.Constant(_I32, 0)),
                                      ir.Constant(_FLOATS, None), ir.Constant(_WORDS, [0] * _LANES))

    first_fiber = builder.mul(row, fibers)
    codes = builder.gep(data(packed_type, packed, _I8), [builder.mul(first_fiber, half)])
    shifts = builder.gep(data(shift_type, shift, _F32), [first_fiber])
    scales = builder.gep(data(scale_type, scale, _F32), [first_fiber])
    nibble_values = _vector_at(builder, data(nibbles_type, nibbles, _F32), ir.Constant(_I64, 0), _FLOATS, 4)
    even_x, odd_x = data(even_type, even, _F32), data(odd_type, odd, _F32)
    zero = ir.Constant(_FLOATS, [0.0] * _LANES)
    sums = [cgutils.alloca_once_value(builder, zero) for _ in range(2)]
    low_bits, four = ir.Constant(_WORDS, [15] * _LANES), ir.Constant(_WORDS, [4] * _LANES)
    blocks = builder.udiv(half, ir.Constant(_I64, _LANES))
    with cgutils.for_range(builder, fibers) as fiber:
        # the fiber's 16 values: (nibble value - shift) * scale, rounded to f16 by the CPU's
        # conversions when the chain computes in f16 (they round as numpy does: `decompress.py`)
        exact = builder.fmul(builder.fsub(nibble_values, broadcast(builder.load(builder.gep(shifts, [fiber.index])))),
                             broadcast(builder.load(builder.gep(scales, [fiber.index]))))
        rounded = builder.fpext(builder.fptrunc(exact, ir.VectorType(ir.HalfType(), _LANES)), _FLOATS)
        table = builder.select(to_f16, rounded, exact)
        first = builder.mul(fiber.index, half)
        with cgutils.for_range(builder, blocks) as block:
            at = builder.add(first, builder.mul(block.index, ir.Constant(_I64, _LANES)))
            words = builder.zext(_vector_at(builder, codes, at, _BYTES, 1), _WORDS)
            for total, indices, x in ((sums[0], builder.and_(words, low_bits), even_x),
                                      (sums[1], builder.lshr(words, four), odd_x)):
                values = builder.call(permute, [table, indices])
                product = builder.fmul(values, _vector_at(builder, x, at, _FLOATS, 4))
                builder.store(builder.fadd(builder.load(total), product), total)
    return _lanes_summed(builder, builder.fadd(builder.load(sums[0]), builder.load(sums[1])))


@intrinsic
def _row_dot(typing_context, packed, row, nibbles, shift, scale, even_x, odd_x, fibers, half, to_f16):  # pragma: no cover - compiled
    """Weight row `row` (its `fibers` fibers of `half` bytes, a multiple of 16, in `packed`)
    times the activation, each fiber's 16 values worked out in a register."""
    index = numba.types.int64
    return (numba.types.float32(packed, index, nibbles, shift, scale, even_x, odd_x, index, index, numba.types.boolean),
            _row_dot_codegen)


@numba.njit(nogil=True, cache=True)
def product_levels(packed, sign, shift, scale, fibers, even_x, odd_x, to_f16, out, lo, hi):  # pragma: no cover - compiled
    """`out[r]` for weight rows r in [lo, hi), as `decompress_kernels.product_nibbles` computes
    them, each code's value looked up among its fiber's 16 (see above)."""
    nibbles = np.empty(16, np.float32)  # the value of each nibble's bits, its sign bit flipped
    for n in range(16):
        nibbles[n] = np.float32(n ^ sign)
    half = packed.shape[1]
    for r in range(lo, hi):
        out[r] = _row_dot(packed, r, nibbles, shift, scale, even_x, odd_x, fibers, half, to_f16)
