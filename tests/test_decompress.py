"""Decompression by arithmetic (irscatter/ops/common/decompress.py, its rounding f16_rounding.py) has numpy's f16 rounding for
every product a compressed weight can hold: every f16 scale (all 65536 patterns) times every
difference d of a code and its zero point in -255..255.

The products of d in 0..255 by every pattern are already all of them: (-d) * s is d * (-s), the
same f32 bits, and -s is a pattern too. So the reference is checked on d >= 0, against `want`
made once, and the kernels also walk the negative differences (a zero point above the codes).
"""

import warnings

import numpy as np
import pytest
from helpers import EXHAUSTIVE

from irscatter.ops.common import accel
from irscatter.ops.common.decompress import (
    decompress,
    levels_usable,
    product,
    product_levels,
    product_nibbles,
    split_pairs,
)
from irscatter.ops.common.f16_rounding import rounded_to_f16

SCALES = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
CODES = np.tile(np.arange(256, dtype=np.uint8), (len(SCALES), 1))  # a fiber per scale, every u8 code


@pytest.fixture(scope="module")
def want() -> np.ndarray:
    """[scale, d] for d in 0..255: the f32 product rounded by numpy to f16, as f32."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infinite and NaN scales, overflow to infinity
        return (SCALES[:, None] * np.arange(256, dtype=np.float32)).astype(np.float16).astype(np.float32)


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit, except that a NaN need only be a NaN."""
    return bool(((got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))).all())


def test_the_reference_rounds_every_product_as_numpy_does(want):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        products = SCALES[:, None] * np.arange(256, dtype=np.float32)
    assert _same(rounded_to_f16(products), want)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_the_kernels_decompress_every_code_and_scale_as_the_chain_does(want, backend):
    """Zero point 0 (d = code) and 255 with the scales negated (d * s = (255 - code) * -s), and
    the same codes as signed bytes, whose zero point is then in the codes' own range. The numpy
    path rounds with numpy's own f16 cast, so outside IRSCATTER_EXHAUSTIVE it takes every 16th
    scale (its byte and zero-point arithmetic is the same for all)."""
    if backend == "numba" and not accel.available():
        pytest.skip("numba is not installed")
    if backend == "numpy" and not EXHAUSTIVE:
        want = want[::16]
    scales, codes = SCALES[::len(SCALES) // len(want)], CODES[:len(want)]
    out = np.empty(codes.shape, np.float32)
    fibers = len(scales)
    with accel.use(backend), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        decompress(codes, 0, np.zeros(fibers, np.float32), scales, 0, True, out)
        assert _same(out, want)
        decompress(codes, 0, np.full(fibers, 255, np.float32), -scales, 0, True, out)
        flipped = want[:, ::-1].copy()
        flipped[:, -1] *= -1  # d = 0 is +0, and +0 * -s is -(0 * s)
        assert _same(out, flipped)
        # i8 codes (bytes 128..255 are -128..-1) less a zero point of -128: d = byte ^ 128
        decompress(codes, 128, np.zeros(fibers, np.float32), scales, 0, True, out)
        assert _same(out, want[:, np.arange(256) ^ 128])
        # in f32 the product is rounded once, as numpy's f32 Multiply does (fibers 1000..1299 here)
        wider = scales * np.float32(1.1)
        decompress(codes[1000:1300], 0, np.full(fibers, 7, np.float32), wider, 1000, False, out[:300])
        assert _same(out[:300], (np.arange(256, dtype=np.float32) - 7) * wider[1000:1300, None])


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("sign", [0, 128])
def test_the_products_multiply_every_value_the_chain_gives(sign, packed):
    """The products' loops decompress an f16 chain as `code * s - shift * s` in one multiply-add:
    fed each unit vector, a product of rows of one fiber each gives one column of the weight,
    and so every code of every row is compared, bit for bit, with `decompress`'s values. Rows:
    every finite f16 scale (every 16th outside IRSCATTER_EXHAUSTIVE) with the lowest and the
    highest zero point, so that the differences span -255..255; 4-bit codes (`packed`, sign 8
    for 128) with zero points 0 and 15."""
    if not accel.available():
        pytest.skip("numba is not installed")
    finite = SCALES[np.isfinite(SCALES)][::1 if EXHAUSTIVE else 16]
    scales = np.concatenate([finite, finite])
    top, sign = (15, sign // 16) if packed else (255, sign)
    shift = np.repeat(np.array([0, top], np.float32), len(finite))
    codes = np.tile(np.arange(32 if packed else 256) % (top + 1), (len(scales), 1)).astype(np.uint8)
    weight, out = np.empty(codes.shape, np.float32), np.empty(len(scales), np.float32)
    with accel.use("numpy"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # products past f16's range are infinite
        decompress(codes, sign, shift, scales, 0, True, weight)
    bounded = np.isfinite(weight).all(axis=1)  # (elsewhere 0 times an infinite value makes the sum NaN)
    assert bounded.mean() > 0.7
    stored = codes[:, 0::2] | (codes[:, 1::2] << 4) if packed else codes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for column in range(codes.shape[1]):
            unit = np.zeros(codes.shape[1], np.float32)
            unit[column] = 1
            if packed:
                product_nibbles(stored, sign, shift, scales, 1, split_pairs(unit), True, out, 0, len(scales))
            else:
                product(stored, sign, shift, scales, 1, unit, True, out, 0, len(scales))
            assert np.array_equal(out[bounded], weight[bounded, column]), column  # (a sum of -0 and +0 is +0)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("to_f16", [True, False])
def test_codes_two_to_a_byte_decompress_as_the_same_codes_a_byte_each(backend, to_f16):
    """4-bit codes as the weights file packs them (code 2j in the low nibble of byte j), unsigned
    and signed (sign 8), with zero points across the codes' range and scales of every kind."""
    if backend == "numba" and not accel.available():
        pytest.skip("numba is not installed")
    generator = np.random.default_rng(3)
    codes = generator.integers(0, 16, (300, 64), dtype=np.uint8)
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    scales = SCALES[generator.integers(0, len(SCALES), 300)]
    scales[~np.isfinite(scales)] = 1
    with accel.use(backend), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for sign in (0, 8):
            shift = (generator.integers(0, 16, 300) + sign).astype(np.float32)
            one, two = np.empty((200, 64), np.float32), np.empty((200, 64), np.float32)
            decompress(codes[100:], sign, shift, scales, 100, to_f16, one)
            decompress(packed[100:], sign, shift, scales, 100, to_f16, two, packed=True)
            assert _same(two, one)


def test_the_rounding_by_bits_rounds_every_product_as_numpy_does(want):
    """The compiled loops round by the CPU's f16 conversions where it has them (x86's F16C),
    and by arithmetic on the bits elsewhere: the second, run here on whatever CPU this is, has
    numpy's bits too (plain scales by its short form, every scale by its whole one)."""
    if not accel.available():
        pytest.skip("numba is not installed")
    import numba

    from irscatter.ops.common import decompress_kernels as kernels

    @numba.njit
    def by_bits(values, plain, out):
        for i in range(values.size):
            v = values.flat[i]
            out.flat[i] = kernels._float(kernels._rounded_plain(v) if plain else kernels._rounded_any(v))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        products = SCALES[:, None] * np.arange(256, dtype=np.float32)
    got = np.empty_like(products)
    by_bits(products, False, got)
    assert _same(got, want)
    plain = (np.abs(SCALES) >= 2.0 ** -14) & (np.abs(SCALES) <= 256)
    short = np.empty_like(products[plain])
    by_bits(products[plain], True, short)
    assert _same(short, want[plain])


@pytest.mark.parametrize("to_f16", [True, False])
@pytest.mark.parametrize("sign", [0, 8])
def test_codes_looked_up_have_the_values_of_the_arithmetic_for_every_scale(sign, to_f16):
    """A fiber's 16 values as the lookups work them out in a register: fed each unit vector, a
    product of rows of one fiber each (every finite f16 scale, zero points across the codes'
    range) gives one column of the weight, exactly, as numpy decompresses it, wherever no value
    of the row overflows f16."""
    if not levels_usable(32):
        pytest.skip("the lookups need numba and AVX-512")
    finite = SCALES[np.isfinite(SCALES)]
    shift = (np.random.default_rng(4).integers(0, 16, len(finite)) + sign).astype(np.float32)
    codes = np.tile(np.arange(32, dtype=np.uint8) % 16, (len(finite), 1))  # every nibble, low and high
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    weight = np.empty(codes.shape, np.float32)
    with accel.use("numpy"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        decompress(codes, sign, shift, finite, 0, to_f16, weight)
    out = np.empty(len(finite), np.float32)
    bounded = np.isfinite(weight).all(axis=1)  # (elsewhere 0 times an infinite value makes the sum NaN)
    assert bounded.sum() > len(finite) * 0.8
    for column in range(16):
        unit = np.zeros(32, np.float32)
        unit[column] = 1
        product_levels(packed, sign, shift, finite, 1, split_pairs(unit), to_f16, out, 0, len(finite))
        assert np.array_equal(out[bounded], weight[bounded, column]), column  # (a sum of -0 and +0 is +0)
        assert np.isnan(out[~bounded]).all() or not to_f16


@pytest.mark.parametrize("length", [32, 128, 256])
def test_codes_looked_up_give_the_products_of_the_arithmetic(length):
    """A product of 4-bit codes by lookups: fed a unit vector it gives one column of the
    weight exactly (whatever the order of its sums), and on random activations what the
    arithmetic gives but for the order of the sums. Runs where the CPU can look codes up."""
    if not levels_usable(length):
        pytest.skip("the lookups need numba and AVX-512")
    generator = np.random.default_rng(5)
    rows, fibers = 40, 256 // length
    for sign in (0, 8):
        codes = generator.integers(0, 16, (rows * fibers, length), dtype=np.uint8)
        packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
        shift = (generator.integers(0, 16, rows * fibers) + sign).astype(np.float32)
        scale = (generator.standard_normal(rows * fibers) * 0.01).astype(np.float32)
        for to_f16 in (True, False):
            weight = np.empty(codes.shape, np.float32)
            with accel.use("numpy"):
                decompress(codes, sign, shift, scale, 0, to_f16, weight)
            weight = weight.reshape(rows, fibers * length)
            out = np.empty(rows, np.float32)
            for column in sorted({0, 1, length - 1, min(length, fibers * length - 1), fibers * length - 1}):
                unit = np.zeros(fibers * length, np.float32)
                unit[column] = 1
                product_levels(packed, sign, shift, scale, fibers, split_pairs(unit), to_f16, out, 0, rows)
                assert np.array_equal(out, weight[:, column]), (sign, to_f16, column)  # (a sum of -0 and +0 is +0)
            x = generator.standard_normal(fibers * length).astype(np.float32)
            arithmetic = np.empty(rows, np.float32)
            with accel.use("numba"):
                product_nibbles(packed, sign, shift, scale, fibers, split_pairs(x), to_f16, arithmetic, 0, rows)
            out[:] = np.nan
            product_levels(packed, sign, shift, scale, fibers, split_pairs(x), to_f16, out, 3, rows)  # rows 3.. only
            assert np.isnan(out[:3]).all()
            np.testing.assert_allclose(out[3:], arithmetic[3:], rtol=0, atol=1e-5 * np.abs(arithmetic).max())


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_codes_not_in_order_in_memory_decompress_and_multiply_as_their_copies(backend):
    """Every row of packed codes taken from a larger array (a strided view), and a shift that
    is a view too: the same values as from contiguous copies, by whichever loop takes them."""
    if backend == "numba" and not accel.available():
        pytest.skip("numba is not installed")
    generator = np.random.default_rng(6)
    every = generator.integers(0, 256, (80, 64), dtype=np.uint8)
    packed, shift = every[::2], (generator.integers(0, 16, 80) + 8).astype(np.float32)[::2]
    scale = (generator.standard_normal(40) * 0.01).astype(np.float32)
    with accel.use(backend):
        one, two = np.empty((40, 128), np.float32), np.empty((40, 128), np.float32)
        decompress(packed, 8, shift, scale, 0, True, one, packed=True)
        decompress(packed.copy(), 8, shift.copy(), scale, 0, True, two, packed=True)
        assert _same(one, two)
    if backend == "numba":
        x = generator.standard_normal(128).astype(np.float32)
        got, want = np.empty(40, np.float32), np.empty(40, np.float32)
        (product_levels if levels_usable(128) else product_nibbles)(packed, 8, shift, scale, 1, split_pairs(x), True,
                                                                    got, 0, 40)
        product_nibbles(packed.copy(), 8, shift.copy(), scale, 1, split_pairs(x), True, want, 0, 40)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
