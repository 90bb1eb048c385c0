"""Oracles of the generation ops: Eye-9, RandomUniform-8, Multinomial-13 and RandomPoisson-17, one
Python step per element (per Philox block, per Mersenne Twister word, per draw).

The generators are written from the spec page and the papers, with Python integers: Philox
4x32-10 one block at a time (`philox_block`), MT19937 one word at a time (`MersenneTwister`).
Values are made from words as the spec page's formulas say, rounding each arithmetic step to
the output type with numpy scalars (f16 nearest-even; bf16 as OpenVINO's bf16 type rounds in
its reference, `bf16_round`). Each op oracle takes the op's inputs, then its attributes by name
(bind them with functools.partial).
"""

from __future__ import annotations

import math
import struct

import ml_dtypes
import numpy as np

MASK32 = 0xFFFFFFFF
DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64, "i8": np.int8,
          "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
          "u64": np.uint64}


# --- Philox 4x32-10 ---------------------------------------------------------------------------


def philox_block(n: int, global_seed: int, op_seed: int) -> list[int]:
    """The 4 words of block n: the counter (n, op_seed) as four 32-bit halves, low first,
    under the key global_seed, through 10 rounds; the key steps by the Weyl constants between
    rounds."""
    c = [n & MASK32, (n >> 32) & MASK32, op_seed & MASK32, (op_seed >> 32) & MASK32]
    key = [global_seed & MASK32, (global_seed >> 32) & MASK32]
    for r in range(10):
        product_n = 0xD2511F53 * c[0]
        product_counter = 0xCD9E8D57 * c[2]
        c = [(product_counter >> 32) ^ c[1] ^ key[0], product_counter & MASK32,
             (product_n >> 32) ^ c[3] ^ key[1], product_n & MASK32]
        if r < 9:
            key = [(key[0] + 0x9E3779B9) & MASK32, (key[1] + 0xBB67AE85) & MASK32]
    return c


def philox_words(count: int, global_seed: int, op_seed: int) -> list[int]:
    words: list[int] = []
    n = 0
    while len(words) < count:
        words.extend(philox_block(n, global_seed, op_seed))
        n += 1
    return words[:count]


# --- MT19937 ----------------------------------------------------------------------------------


class MersenneTwister:
    """MT19937 as in Matsumoto and Nishimura's paper: seeded by the 1812433253 recurrence, twisted
    624 words at a time, tempered one word at a time."""

    def __init__(self, seed: int) -> None:
        self.state = [seed & MASK32]
        for i in range(1, 624):
            previous = self.state[-1]
            self.state.append((1812433253 * (previous ^ (previous >> 30)) + i) & MASK32)
        self.index = 624

    def _twist(self) -> None:
        for i in range(624):
            y = (self.state[i] & 0x80000000) | (self.state[(i + 1) % 624] & 0x7FFFFFFF)
            self.state[i] = self.state[(i + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
        self.index = 0

    def next(self) -> int:
        if self.index == 624:
            self._twist()
        y = self.state[self.index]
        self.index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        y ^= y >> 18
        return y & MASK32


# --- words to values --------------------------------------------------------------------------


def bf16_round(x: float) -> ml_dtypes.bfloat16:
    """An f32 value to bf16 as OpenVINO's bf16 type rounds: the upper 16 bits, plus one when
    bit 15 is set and the upper half is odd."""
    bits = struct.unpack("<I", struct.pack("<f", float(np.float32(x))))[0]
    upper = bits >> 16
    if (bits >> 15) & 1 and upper & 1:
        upper += 1
    return np.array([upper & 0xFFFF], np.uint16).view(ml_dtypes.bfloat16)[0]


def _in_type(x: float, dtype: np.dtype):
    if dtype == ml_dtypes.bfloat16:
        return bf16_round(x)
    return dtype.type(x)


def _float_from_bits(bits: int, fmt: str) -> float:
    return struct.unpack(fmt, struct.pack(fmt.replace("e", "H").replace("f", "I").replace("d", "Q"), bits))[0]


def random_uniform(shape, minval, maxval, *, output_type: str, global_seed: int = 0, op_seed: int = 0,
                   alignment: str = "tensorflow"):
    """RandomUniform-8: the spec page's formulas, one value at a time."""
    dims = [int(d) for d in np.asarray(shape).reshape(-1)]
    count = int(np.prod(dims)) if dims else 1
    dtype = np.asarray(minval).dtype
    low, high = np.asarray(minval).reshape(-1)[0], np.asarray(maxval).reshape(-1)[0]
    wide = output_type in ("f64", "i64")
    if alignment.lower() == "pytorch":
        if output_type == "i64" and int(low) <= MASK32 and int(high) <= MASK32:
            wide = False
        twister = MersenneTwister(global_seed)
        words = [twister.next() for _ in range(count * (2 if wide else 1))]
    else:
        words = philox_words(count * (2 if wide else 1), global_seed, op_seed)
    out = []
    for e in range(count):
        x, y = (words[2 * e], words[2 * e + 1]) if wide else (words[e], None)
        out.append(_value(x, y, output_type, dtype, low, high, alignment.lower()))
    return np.array(out, dtype=dtype).reshape(dims)


def _value(x: int, y: int | None, output_type: str, dtype: np.dtype, low, high, alignment: str):
    if output_type in ("i32", "i64"):
        span = int(high) - int(low)  # min < max: a positive span of at most 2^bits - 1
        number = x if y is None else ((y << 32) | x) if alignment == "tensorflow" else ((x << 32) | y)
        result = number % span + int(low)
        return dtype.type(result)
    if alignment == "tensorflow":
        if output_type == "f32":
            u = np.float32(_float_from_bits((127 << 23) | (x & 0x7FFFFF), "<f")) - np.float32(1)
            return np.float32(np.float32(u * (np.float32(high) - np.float32(low))) + np.float32(low))
        if output_type == "f64":
            mantissa = ((x & 0xFFFFF) << 32) | y
            u = _float_from_bits((1023 << 52) | mantissa, "<d") - 1.0
            return u * (float(high) - float(low)) + float(low)
        if output_type == "f16":
            u = float(np.float16(_float_from_bits((15 << 10) | (x & 0x3FF), "<e"))) - 1.0
        else:  # bf16: the low 7 bits as the mantissa of a bf16 in [1, 2)
            u = float(np.array([(127 << 7) | (x & 0x7F)], np.uint16).view(ml_dtypes.bfloat16)[0]) - 1.0
        span = _in_type(np.float32(float(high)) - np.float32(float(low)), dtype)
        scaled = _in_type(np.float32(u) * np.float32(float(span)), dtype)
        return _in_type(np.float32(float(scaled)) + np.float32(float(low)), dtype)
    # pytorch
    if output_type == "f64":
        number = (x << 32) | y
        return float(number & ((1 << 53) - 1)) * 2.0 ** -53 * (float(high) - float(low)) + float(low)
    digits = {"f32": 24, "f16": 11, "bf16": 8}[output_type]
    u = np.float32(x & ((1 << digits) - 1)) * np.float32(2.0 ** -digits)
    if output_type == "f32":
        return np.float32(np.float32(u * (np.float32(high) - np.float32(low))) + np.float32(low))
    span = _in_type(np.float32(float(high)) - np.float32(float(low)), dtype)
    return _in_type(np.float32(np.float32(u * np.float32(float(span))) + np.float32(float(low))), dtype)


# --- Eye-9 ------------------------------------------------------------------------------------


def eye(num_rows, num_columns, diagonal_index, batch_shape=None, *, output_type: str):
    """output[..., i, i + diagonal_index] = 1, everything else 0."""
    rows, columns, d = (int(np.asarray(v).reshape(-1)[0]) for v in (num_rows, num_columns, diagonal_index))
    batch = [] if batch_shape is None else [int(v) for v in np.asarray(batch_shape).reshape(-1)]
    dtype = np.dtype(DTYPES[output_type])
    out = np.zeros([*batch, rows, columns], dtype=dtype)
    flat = out.reshape(-1, rows, columns) if rows * columns else out
    if rows * columns:
        for m in range(flat.shape[0]):
            for i in range(rows):
                for j in range(columns):
                    if j == i + d:
                        flat[m, i, j] = 1
    return out


# --- Multinomial-13 ---------------------------------------------------------------------------


def multinomial(probs, num_samples, *, convert_type: str, with_replacement: bool, log_probs: bool,
                global_seed: int = 0, op_seed: int = 0):
    """The reference's steps: exp (with log_probs), running sum, division by the last value, then
    per draw a linear scan for the first class whose CDF value reaches the draw; without
    replacement the chosen class's probability leaves the CDF before the next draw. The CDF is
    kept in the compute type (f32 for the 16-bit floats); the draws are RandomUniform's."""
    with np.errstate(all="ignore"):  # sums of 0, exp past the type's range: NaN and inf as in C++
        return _multinomial(np.asarray(probs), num_samples, convert_type, with_replacement, log_probs, global_seed,
                            op_seed)


def _multinomial(probs, num_samples, convert_type, with_replacement, log_probs, global_seed, op_seed):
    work = np.float64 if probs.dtype == np.float64 else np.float32
    batch, classes = probs.shape
    samples = int(np.asarray(num_samples).reshape(-1)[0])
    draws = random_uniform(np.array([batch, samples]), np.zeros((), probs.dtype), np.ones((), probs.dtype),
                           output_type={np.dtype(np.float16): "f16", np.dtype(np.float32): "f32",
                                        np.dtype(np.float64): "f64"}.get(probs.dtype, "bf16"),
                           global_seed=global_seed, op_seed=op_seed)
    out = np.zeros((batch, samples), dtype=np.int32 if convert_type == "i32" else np.int64)
    for b in range(batch):
        cdf, total = [], work(0)
        for k in range(classes):
            p = float(probs[b, k])
            if log_probs:
                p = float(np.exp(np.float64(p)))
            total = work(total + work(p))
            cdf.append(total)
        if classes:
            last = cdf[-1]
            cdf = [work(v / last) for v in cdf]
        for j in range(samples):
            u = work(float(draws[b, j]))
            chosen = None
            for k in range(classes):
                if u <= cdf[k]:
                    chosen = k
                    break
            out[b, j] = 0 if chosen is None else chosen
            if not with_replacement and chosen is not None:
                taken = work(cdf[chosen] - (cdf[chosen - 1] if chosen else work(0)))
                divisor = work(work(1) - taken)
                for k in range(classes):
                    value = work(cdf[k] - taken) if k >= chosen else cdf[k]
                    cdf[k] = work(value / divisor)
    return out


# --- RandomPoisson-17 -------------------------------------------------------------------------


def _log(v: float) -> float:
    return -math.inf if v == 0 else math.log(v)


def _floor(v: float) -> float:
    return v if not math.isfinite(v) else float(math.floor(v))


class _PhiloxUniforms:
    """The "tensorflow" uniforms of one rate: Philox blocks from block `first` on, each made
    into two f64 values (words 0-1 and 2-3, the page's RandomUniform f64 layout), handed out
    last first."""

    def __init__(self, first: int, global_seed: int, op_seed: int) -> None:
        self.block, self.seeds, self.left = first, (global_seed, op_seed), []

    def next(self) -> float:
        if not self.left:
            w = philox_block(self.block, *self.seeds)
            self.block += 1
            self.left = [_tensorflow_f64(w[0], w[1]), _tensorflow_f64(w[2], w[3])]
        return self.left.pop()


class _TwisterUniforms:
    """The "pytorch" uniforms: MT19937 words in pairs, the low 53 bits of (first << 32 | second)
    times 2^-53, in order."""

    def __init__(self, seed: int) -> None:
        self.twister = MersenneTwister(seed)

    def next(self) -> float:
        first, second = self.twister.next(), self.twister.next()
        return float(((first << 32) | second) & ((1 << 53) - 1)) * 2.0 ** -53


def _tensorflow_f64(x: int, y: int) -> float:
    return _float_from_bits((1023 << 52) | ((x & 0xFFFFF) << 32) | y, "<d") - 1.0


def _knuth(rate: float, uniforms) -> float:
    """Multiply uniforms until the product is at most e^-rate; the count is the factors less one."""
    limit, product, count = math.exp(-rate), 1.0, -1
    while True:
        product *= uniforms.next()
        count += 1
        if not product > limit:
            return float(count)


def _hormann(rate: float, uniforms) -> float:
    """Hormann's transformed rejection (PTRS), as the page writes it."""
    s = math.sqrt(rate)
    log_rate = _log(rate)
    b = 0.931 + 2.53 * s
    a = -0.059 + 0.02483 * b
    inverse_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    while True:
        u, v = uniforms.next() - 0.5, uniforms.next()
        us = 0.5 - abs(u)
        with np.errstate(all="ignore"):  # us = 0 divides by zero; an infinite rate gives inf - inf
            k = _floor(float((2 * a / np.float64(us) + b) * u + rate + 0.43))
        if us >= 0.07 and v <= v_r:
            return k
        if k < 0 or (us < 0.013 and v > us):
            continue
        if _log(v) + _log(inverse_alpha) - _log(a / (us * us) + b) <= -rate + k * log_rate - math.lgamma(k + 1):
            return k


def random_poisson(rates, *, global_seed: int = 0, op_seed: int = 0, alignment: str = "tensorflow"):
    """RandomPoisson-17: per rate in row-major order, 0 for 0, Knuth below 10, Hormann from 10;
    "tensorflow" gives rate i its own Philox stream from block 256 * i, "pytorch" one MT19937
    stream to all. The f64 count is converted to the rates' type (16-bit types through f32)."""
    rates = np.asarray(rates)
    flat = [float(r) for r in rates.reshape(-1)]
    shared = _TwisterUniforms(global_seed)
    out = []
    for i, rate in enumerate(flat):
        uniforms = shared if alignment.lower() == "pytorch" else _PhiloxUniforms(256 * i, global_seed, op_seed)
        if rate == 0:
            count = 0.0
        elif rate < 10:
            count = _knuth(rate, uniforms)
        else:
            count = _hormann(rate, uniforms)
        out.append(_in_type(np.float32(count), rates.dtype) if rates.dtype.itemsize == 2 else count)
    return np.array(out, dtype=rates.dtype).reshape(rates.shape)
