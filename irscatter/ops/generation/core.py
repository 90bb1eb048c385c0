"""The random bit generators behind RandomUniform-8, Multinomial-13 and RandomPoisson-17, over all
counters at once.

Both produce a stream of 32-bit words; the ops turn words into values (`uniform_values`).

* Philox 4x32-10 (alignment "tensorflow", the default): block i of the stream is the
  ten-round Philox bijection of the 128-bit counter (lo(i), hi(i), lo(op_seed), hi(op_seed))
  under the key (lo(global_seed), hi(global_seed)), and yields 4 words. Every block is
  independent, so all of them are computed together with uint64 arithmetic; numpy's own
  `Philox` is the 4x64 variant and gives other words.
* MT19937 (alignment "pytorch"): the standard Mersenne Twister seeded with the low 32 bits
  of global_seed (op_seed is not used), its tempered words in order. The 624-word state is
  set up by the generator's seeding recurrence and the words are drawn from numpy's MT19937
  bit generator, which runs the same twist and tempering.

How words become values follows OpenVINO's core reference converters (see `uniform_values`);
the spec page describes the same bit layouts.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.limits import check_allocation
from irscatter.ops.common.numeric import convert_array

_M0 = np.uint64(0xD2511F53)  # multiplier of the first counter pair
_M1 = np.uint64(0xCD9E8D57)  # multiplier of the second counter pair
_W0 = np.uint32(0x9E3779B9)  # key schedule (Weyl sequence) steps
_W1 = np.uint32(0xBB67AE85)
_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)
ROUNDS = 10


def philox_words(blocks: int, global_seed: int, op_seed: int) -> np.ndarray:
    """The first `blocks` Philox 4x32-10 blocks as a (blocks, 4) uint32 array."""
    return philox_blocks(np.arange(blocks, dtype=np.uint64), global_seed, op_seed)


def philox_blocks(counters: np.ndarray, global_seed: int, op_seed: int) -> np.ndarray:
    """The Philox 4x32-10 blocks at the given block numbers (uint64, any shape) as an array of
    that shape plus a last axis of the block's 4 uint32 words."""
    n = np.asarray(counters, dtype=np.uint64).reshape(-1)
    blocks = n.size
    c0 = (n & _LOW).astype(np.uint32)
    c1 = (n >> _SHIFT).astype(np.uint32)
    # the counter's upper half starts at op_seed and would only carry past 2^64 blocks
    c2 = np.full(blocks, op_seed & 0xFFFFFFFF, dtype=np.uint32)
    c3 = np.full(blocks, (op_seed >> 32) & 0xFFFFFFFF, dtype=np.uint32)
    k0 = np.uint32(global_seed & 0xFFFFFFFF)
    k1 = np.uint32((global_seed >> 32) & 0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for r in range(ROUNDS):
            p0 = _M0 * c0.astype(np.uint64)
            p1 = _M1 * c2.astype(np.uint64)
            c0, c1, c2, c3 = ((p1 >> _SHIFT).astype(np.uint32) ^ c1 ^ k0, (p1 & _LOW).astype(np.uint32),
                              (p0 >> _SHIFT).astype(np.uint32) ^ c3 ^ k1, (p0 & _LOW).astype(np.uint32))
            if r < ROUNDS - 1:
                k0, k1 = k0 + _W0, k1 + _W1
    return np.stack([c0, c1, c2, c3], axis=-1).reshape(*np.shape(counters), 4)


def mt19937_words(count: int, seed: int) -> np.ndarray:
    """The first `count` tempered MT19937 words (uint32) of the generator seeded with `seed`."""
    return mt19937(seed).random_raw(count).astype(np.uint32)


def mt19937(seed: int) -> np.random.MT19937:
    """numpy's MT19937 bit generator in the state the generator seeded with `seed` starts from:
    each `random_raw` call continues the stream of tempered words."""
    key = np.empty(624, dtype=np.uint32)
    s = seed & 0xFFFFFFFF
    key[0] = s
    for j in range(1, 624):  # the seeding recurrence: 623 sequential steps, whatever the output size
        s = (1812433253 * (s ^ (s >> 30)) + j) & 0xFFFFFFFF
        key[j] = s
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
    return bits


def random_words(count: int, per_value: int, global_seed: int, op_seed: int, alignment: str) -> np.ndarray:
    """(count, per_value) words: value e is made of words e*per_value ... of the stream (Philox
    hands out whole blocks of 4 words, the rest of the last block unused)."""
    total = count * per_value
    if alignment == "pytorch":
        words = mt19937_words(total, global_seed)
    else:
        words = philox_words(-(-total // 4), global_seed, op_seed).reshape(-1)[:total]
    return words.reshape(count, per_value)


def check_output(dims: list[int], itemsize: int) -> None:
    """The tensor limits on an output whose shape comes from input values. An empty output is
    held to them too with its size-0 dims left out: numpy cannot lay out an array whose other
    dims multiply past its index range, whatever its size."""
    check_allocation(dims, itemsize)
    check_allocation([d for d in dims if d], itemsize)


# --- from words to values -------------------------------------------------------------------------

_F16_TYPES = (ElementType.f16, ElementType.bf16)


def round16(x: np.ndarray, etype: ElementType) -> np.ndarray:
    """f32 values rounded to f16 (nearest-even) or bf16, as OpenVINO's 16-bit C++ types round
    in its reference: bf16 by the rule of `convert_array`'s "openvino-fold" (the upper half,
    plus one when bit 15 is set and the upper half is odd)."""
    if etype is ElementType.bf16:
        return convert_array(np.asarray(x, dtype=np.float32), ElementType.f32, etype, bf16_rounding="openvino-fold")
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(np.float32).astype(etype.dtype)


def uniform_values(count: int, etype: ElementType, low, high, global_seed: int, op_seed: int,
                   alignment: str = "tensorflow") -> np.ndarray:
    """`count` values of `etype` uniform in [low, high), as RandomUniform-8 makes them.

    Tensorflow (Philox) layouts: f32 takes the low 23 bits of a word as the mantissa of a
    value in [1, 2) and subtracts 1; f16 the low 10 bits, bf16 the low 7 bits, likewise, in
    their own type; f64 takes two words, the low 20 bits of the first and all of the second
    as its 52-bit mantissa. Floats are then x * (high - low) + low, each step rounded to the
    output type. i32 is word % (high - low) + low in 32-bit unsigned arithmetic, i64 the
    64-bit number (second word << 32 | first word) % (high - low) + low in 64-bit unsigned
    arithmetic.

    PyTorch (MT19937) layouts: a float is (word & (2^d - 1)) / 2^d with d the type's
    significand digits (24, 11, 8; f64: 53 bits of (first << 32 | second)), computed in f32
    (f64 for f64), then x * (high - low) + low with high - low in the output type and the
    rest in f32 for the 16-bit types. i32 is word % (high - low) + low; i64 the same on one
    word when low and high are at most 2^32 - 1, else on (first << 32 | second).
    """
    if alignment == "pytorch":
        return _pytorch_values(count, etype, low, high, global_seed)
    return _tensorflow_values(count, etype, low, high, global_seed, op_seed)


def tensorflow_unit_f64(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """f64 values in [0, 1) from word pairs, the Philox way: the low 20 bits of `first` and all
    of `second` as the mantissa of a value in [1, 2), minus 1."""
    mantissa = ((first.astype(np.uint64) & np.uint64(0xFFFFF)) << _SHIFT) | second.astype(np.uint64)
    return (mantissa | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0


def pytorch_unit_f64(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """f64 values in [0, 1) from word pairs, the PyTorch way: the low 53 bits of
    (first << 32 | second) times 2^-53."""
    value = (first.astype(np.uint64) << _SHIFT) | second.astype(np.uint64)
    return (value & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53


def _tensorflow_values(count: int, etype: ElementType, low, high, global_seed: int, op_seed: int) -> np.ndarray:
    wide = etype in (ElementType.f64, ElementType.i64)
    words = random_words(count, 2 if wide else 1, global_seed, op_seed, "tensorflow")
    with np.errstate(over="ignore", invalid="ignore"):
        if etype is ElementType.f32:
            x = ((words[:, 0] & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)
            span = np.float32(high) - np.float32(low)
            return x * span + np.float32(low)
        if etype in _F16_TYPES:
            if etype is ElementType.f16:
                one = ((words[:, 0] & np.uint32(0x3FF)) | np.uint32(0x3C00)).astype(np.uint16).view(np.float16)
            else:
                one = ((words[:, 0] & np.uint32(0x7F)) | np.uint32(0x3F80)).astype(np.uint16).view(etype.dtype)
            x = round16(one.astype(np.float32) - 1, etype)  # exact: [1, 2) minus 1
            lo = np.float32(np.asarray(low, dtype=etype.dtype))
            span = round16(np.float32(np.asarray(high, dtype=etype.dtype)) - lo, etype).astype(np.float32)
            scaled = round16(x.astype(np.float32) * span, etype).astype(np.float32)
            return round16(scaled + lo, etype)
        if etype is ElementType.f64:
            x = tensorflow_unit_f64(words[:, 0], words[:, 1])
            return x * (np.float64(high) - np.float64(low)) + np.float64(low)
        if etype is ElementType.i32:
            span = np.uint32((int(high) - int(low)) & 0xFFFFFFFF)
            return (words[:, 0] % span + np.uint32(int(low) & 0xFFFFFFFF)).view(np.int32)
        if etype is ElementType.i64:
            value = (words[:, 1].astype(np.uint64) << _SHIFT) | words[:, 0].astype(np.uint64)
            span = np.uint64((int(high) - int(low)) & 0xFFFFFFFFFFFFFFFF)
            return (value % span + np.uint64(int(low) & 0xFFFFFFFFFFFFFFFF)).view(np.int64)
    raise ValueError(f"RandomUniform makes no {etype} values")


def _pytorch_values(count: int, etype: ElementType, low, high, global_seed: int) -> np.ndarray:
    one_word = etype is not ElementType.f64 and not (
        etype is ElementType.i64 and (int(low) > 0xFFFFFFFF or int(high) > 0xFFFFFFFF))
    words = random_words(count, 1 if one_word else 2, global_seed, 0, "pytorch")
    with np.errstate(over="ignore", invalid="ignore"):
        if etype is ElementType.f32:
            x = (words[:, 0] & np.uint32((1 << 24) - 1)).astype(np.float32) * np.float32(2.0 ** -24)
            return x * (np.float32(high) - np.float32(low)) + np.float32(low)
        if etype in _F16_TYPES:
            digits = 11 if etype is ElementType.f16 else 8
            x = (words[:, 0] & np.uint32((1 << digits) - 1)).astype(np.float32) * np.float32(2.0 ** -digits)
            lo = np.float32(np.asarray(low, dtype=etype.dtype))
            span = round16(np.float32(np.asarray(high, dtype=etype.dtype)) - lo, etype).astype(np.float32)
            return round16(x * span + lo, etype)
        if etype is ElementType.f64:
            x = pytorch_unit_f64(words[:, 0], words[:, 1])
            return x * (np.float64(high) - np.float64(low)) + np.float64(low)
        if etype is ElementType.i32:
            span = np.uint32((int(high) - int(low)) & 0xFFFFFFFF)
            return (words[:, 0] % span + np.uint32(int(low) & 0xFFFFFFFF)).view(np.int32)
        if etype is ElementType.i64:
            if one_word:
                value = words[:, 0].astype(np.uint64)
            else:
                value = (words[:, 0].astype(np.uint64) << _SHIFT) | words[:, 1].astype(np.uint64)
            span = np.uint64((int(high) - int(low)) & 0xFFFFFFFFFFFFFFFF)
            return (value % span + np.uint64(int(low) & 0xFFFFFFFFFFFFFFFF)).view(np.int64)
    raise ValueError(f"RandomUniform makes no {etype} values")
