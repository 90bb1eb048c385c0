"""RandomPoisson-17: one Poisson count per rate, of the rates' type and shape.

A draft of opset17: its spec page defines it, the pinned OpenVINO does not ship it, and OpenVINO's
newer sources (core reference `random_poisson.hpp`) implement it as irscatter does here.

Each rate picks its algorithm: 0 gives 0 and draws nothing; a rate below 10 takes Knuth's
product of uniforms (multiply until the product is at most e^-rate; the count is the number of
factors minus one); 10 and above take Hormann's transformed rejection, two uniforms per attempt.
All arithmetic is in f64 whatever the rates' type, and the count is converted to that type at
the end (f16 and bf16 through f32; bf16 by OpenVINO's own rounding, as its reference reaches bf16
through its Convert: the upper half of the f32, plus one when bit 15 is set and the upper half is
odd, which departs from nearest-even only for some counts above 512).

The uniforms are f64 values in [0, 1) from the generators of RandomUniform-8 (`core`):

* "tensorflow" (the default): Philox 4x32-10 keyed by global_seed, the upper counter half
  op_seed. Rate i has its own stream starting at block 256 * i (TensorFlow reserves 256
  blocks per output), each block giving two uniforms (the Philox f64 layout of words 0-1 and
  2-3) taken in reverse: words 2-3 first. Streams are independent, so every rate of one
  algorithm is sampled at once, in rounds of a few draws each, until the last is accepted.
* "pytorch": MT19937 seeded with global_seed (op_seed unused); consecutive word pairs make
  the uniforms (the PyTorch f64 layout), consumed forward by the rates in row-major order. Where
  one rate's draws start depends on every rate before it, so this alignment goes through the
  positive rates in order (the sequential axis of the op): a Knuth rate tests a window of draws
  at once, and a run of consecutive Hormann rates, whose attempts all take whole pairs, is
  sampled together from a table of every rate's attempt after every number of refusals.

Choices and departures:
  * Determinism. OpenVINO's op keeps a state (the next Philox counter) across inferences, and
    with both seeds 0 seeds itself from the clock. irscatter's op is a pure function: every run
    gives OpenVINO's first inference, and seeds 0 and 0 are used as they are, as in
    RandomUniform-8.
  * A negative or NaN rate is refused (`rate-value`): the page calls them invalid and
    OpenVINO's reference asserts. An infinite rate is neither; it goes through Hormann's
    method as in the reference, which accepts an infinite count or NaN depending on the draw.
  * The rejection test's log-gamma is scipy's, within a few f64 ulps of C's lgamma, and exp and
    log are numpy's, within an ulp of C's: a draw whose outcome hinges on those last bits (about
    one in 10^15) may go the other way.
  * The page draws Knuth's uniforms from (0, 1]; the generators give [0, 1), as in OpenVINO's
    reference (a 0 ends the product at once: the count is the factors so far less one).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.ranges import Bounds
from irscatter.ops.common.special import lgamma
from irscatter.ops.generation.core import (
    mt19937,
    philox_blocks,
    pytorch_unit_f64,
    round16,
    tensorflow_unit_f64,
)
from irscatter.ops.registry import register

RATE_TYPES = (ElementType.bf16, ElementType.f16, ElementType.f32, ElementType.f64)
KNUTH_BELOW = 10.0  # rates below take Knuth's method, the others Hormann's
RESERVED_BLOCKS = 256  # Philox blocks between the streams of two rates ("tensorflow")
HORMANN_ATTEMPTS = 2  # attempts tried at once per rate and round; most rates accept the first
HORMANN_RUN = 64  # "pytorch": consecutive Hormann rates sampled together, at most
Seed = Annotated[int, Field(ge=0, le=2**64 - 1)]

# draws(rows, offset, width): uniforms offset .. offset + width - 1 (width even) of the streams
# of the rates `rows` (indices into the rates being sampled), as a (len(rows), width) array
Draws = Callable[[np.ndarray, int, int], np.ndarray]


def _knuth_width(rates: np.ndarray) -> int:
    """How many uniforms to test per round: enough for nearly every rate up to the largest."""
    top = float(rates.max(initial=0.0))
    return 2 * math.ceil((top + 2 * math.sqrt(top) + 4) / 2)


def knuth(rates: np.ndarray, draws: Draws) -> np.ndarray:
    """Counts for rates in (0, 10) by Knuth's method, each rate from its own stream."""
    limit = np.exp(-rates)
    width = _knuth_width(rates)
    counts = np.zeros(rates.size, dtype=np.int64)
    pending = np.arange(rates.size)
    carried = np.ones(rates.size)
    offset = 0
    while pending.size:
        u = draws(pending, offset, width)
        # the running product, each factor applied in turn as the sequential loop does
        products = np.multiply.accumulate(np.concatenate([carried[:, None], u], axis=1), axis=1)[:, 1:]
        reached = products <= limit[pending, None]
        done = reached.any(axis=1)
        counts[pending[done]] = offset + reached[done].argmax(axis=1)
        carried = products[~done, -1]
        pending = pending[~done]
        offset += width
    return counts


def hormann_constants(rates: np.ndarray) -> np.ndarray:
    """The rate-dependent terms of Hormann's method, one row per rate: rate, log rate, a, b,
    1/alpha and v_r."""
    root = np.sqrt(rates)
    b = 0.931 + 2.53 * root
    a = -0.059 + 0.02483 * b
    inverse_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    return np.stack([rates, np.log(rates), a, b, inverse_alpha, v_r], axis=-1)


def ptrs(constants: tuple, big_u: np.ndarray, big_v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Attempts of Hormann's transformed rejection (PTRS) on uniform pairs (U, V): whether each
    accepts, and its candidate count. `constants` (the six terms of `hormann_constants`, as
    numbers or as columns) broadcast against the pairs; the terms go in the reference's order
    of operations."""
    lam, log_rate, a, b, inverse_alpha, v_r = constants
    centred = big_u - 0.5
    us = 0.5 - np.abs(centred)
    k = np.floor((2 * a / us + b) * centred + lam + 0.43)
    squeezed = (us >= 0.07) & (big_v <= v_r)
    refused = (k < 0) | ((us < 0.013) & (big_v > us))
    fits = np.log(big_v) + np.log(inverse_alpha) - np.log(a / (us * us) + b) <= -lam + k * log_rate - lgamma(k + 1)
    return squeezed | (~refused & fits), k


def hormann(rates: np.ndarray, draws: Draws) -> np.ndarray:
    """Counts for rates of 10 and more by Hormann's method, each rate from its own stream: two
    uniforms per attempt, U then V."""
    constants = hormann_constants(rates)
    counts = np.zeros(rates.size)
    pending = np.arange(rates.size)
    offset = 0
    while pending.size:
        u = draws(pending, offset, 2 * HORMANN_ATTEMPTS)
        accepted, k = ptrs(tuple(constants[pending].T[:, :, None]), u[:, 0::2], u[:, 1::2])
        done = accepted.any(axis=1)
        counts[pending[done]] = k[done, accepted[done].argmax(axis=1)]
        pending = pending[~done]
        offset += 2 * HORMANN_ATTEMPTS
    return counts


def _philox_draws(positions: np.ndarray, global_seed: int, op_seed: int) -> Draws:
    """The "tensorflow" streams: the rate at flat position p starts at block 256 * p."""
    def draws(rows: np.ndarray, offset: int, width: int) -> np.ndarray:
        first = positions[rows].astype(np.uint64) * np.uint64(RESERVED_BLOCKS) + np.uint64(offset // 2)
        words = philox_blocks(first[:, None] + np.arange(width // 2, dtype=np.uint64), global_seed, op_seed)
        u = np.empty((rows.size, width))
        u[:, 0::2] = tensorflow_unit_f64(words[..., 2], words[..., 3])  # a block's last pair comes first
        u[:, 1::2] = tensorflow_unit_f64(words[..., 0], words[..., 1])
        return u

    return draws


class _TwisterStream:
    """The "pytorch" stream: one run of uniforms from MT19937, made as far as it is read, and
    `position`, where the next rate's draws begin."""

    def __init__(self, seed: int, expected: int) -> None:
        self.bits = mt19937(seed)
        self.values = np.empty(0)
        self.position = 0
        self._extend(expected)

    def _extend(self, end: int) -> None:
        more = max(end - self.values.size, self.values.size, 64)
        words = self.bits.random_raw(2 * more).astype(np.uint32)
        self.values = np.concatenate([self.values, pytorch_unit_f64(words[0::2], words[1::2])])

    def take(self, width: int) -> np.ndarray:
        """The next `width` uniforms (not yet consumed: `position` moves when a rate is done)."""
        if self.position + width > self.values.size:
            self._extend(self.position + width)
        return self.values[self.position:self.position + width]

    def knuth(self, limit: float, width: int) -> int:
        """One count by Knuth's method (limit = e^-rate), the uniforms tested a window at a time."""
        offset, carried = 0, 1.0
        while True:
            u = self.take(offset + width)[offset:]
            # the running product (1 * u0 is u0), carried on from the last window after the first
            products = np.multiply.accumulate(u if offset == 0 else np.concatenate([[carried], u]))[-width:]
            reached = np.flatnonzero(products <= limit)
            if reached.size:
                count = offset + int(reached[0])
                self.position += count + 1
                return count
            carried = products[-1]
            offset += width

    def hormann(self, constants: np.ndarray, depth: int | None = None) -> np.ndarray:
        """Counts by Hormann's method for consecutive rates (the rows of `constants`), whose
        attempts take consecutive pairs: rate j's attempt after `delay` refused ones (all rates
        before it counted) is pair j + delay. Every rate's attempts at every delay below `depth`
        (by default more than the refusals to expect, a third of the rates at rate 10) are tried at once; a walk down the table then follows the refusals, one step each, and
        a new table starts where the delays run out."""
        counts = np.empty(constants.shape[0])
        done = 0
        while done < counts.size:
            rows = counts.size - done
            levels = depth or rows // 2 + 4
            pairs = self.take(2 * (rows + levels - 1)).reshape(-1, 2)
            tried = pairs[np.arange(rows)[:, None] + np.arange(levels)]  # [rate, delay, U or V]
            accepted, k = ptrs(tuple(constants[done:, :, None].transpose(1, 0, 2)), tried[..., 0], tried[..., 1])
            row = delay = 0
            while True:
                refused = np.flatnonzero(~accepted[row:, delay])
                stop = rows if refused.size == 0 else row + int(refused[0])
                counts[done + row:done + stop] = k[row:stop, delay]
                row = stop
                if row == rows or delay == levels - 1:
                    break
                delay += 1
            if row < rows:
                delay += 1  # the rate at `row` refused every attempt in the table
            self.position += 2 * (row + delay)
            done += row
        return counts


def twister_counts(rates: np.ndarray, seed: int) -> np.ndarray:
    """The "pytorch" alignment: f64 counts for the flat f64 `rates` (none negative or NaN)
    from one MT19937 stream, the positive rates in order, consecutive Hormann rates together."""
    counts = np.zeros(rates.size)
    positive = np.flatnonzero(rates > 0)
    small = rates[positive] < KNUTH_BELOW
    knuths = np.append(np.flatnonzero(small), positive.size)
    run_end = knuths[np.searchsorted(knuths, np.arange(positive.size))]  # the next Knuth rate's place
    limits = np.exp(-rates)
    constants = np.zeros((rates.size, 6))
    constants[positive[~small]] = hormann_constants(rates[positive[~small]])
    stream = _TwisterStream(seed, int(np.sum(rates[positive[small]]) + 2 * small.sum() + 3 * (~small).sum()))
    width = _knuth_width(rates[positive[small]])
    i = 0
    while i < positive.size:  # each rate starts where the one before stopped
        if small[i]:
            counts[positive[i]] = stream.knuth(limits[positive[i]], width)
            i += 1
            continue
        run = positive[i:min(run_end[i], i + HORMANN_RUN)]
        counts[run] = stream.hormann(constants[run])
        i += run.size
    return counts


def poisson_counts(rates: np.ndarray, global_seed: int, op_seed: int, alignment: str) -> np.ndarray:
    """f64 counts for the flat f64 `rates` (none negative or NaN)."""
    with np.errstate(all="ignore"):
        if alignment == "pytorch":
            return twister_counts(rates, global_seed)
        counts = np.zeros(rates.size)
        for positions, method in ((np.flatnonzero((rates > 0) & (rates < KNUTH_BELOW)), knuth),
                                  (np.flatnonzero(rates >= KNUTH_BELOW), hormann)):
            if positions.size:
                counts[positions] = method(rates[positions], _philox_draws(positions, global_seed, op_seed))
        return counts


@register("RandomPoisson", 17)
class RandomPoisson(Op):
    labels = {
        "rates-rank": "RandomPoisson's rates are a scalar (it takes rank 1 or more)",
        "rate-value": "a RandomPoisson rate is negative or NaN",
    }

    class Attrs(OpAttrs):
        global_seed: Seed = 0
        op_seed: Seed = 0
        alignment: Annotated[Literal["tensorflow", "pytorch"], Lower] = "tensorflow"
    attrs: Attrs

    inputs = ("input",)

    def input_range(self, position: int, infos) -> Bounds | None:
        return (0, 20)  # both methods: below 10 and from 10 up

    def infer(self, input: TensorInfo) -> TensorInfo:
        check(input.etype in (*RATE_TYPES, ElementType.dynamic), "float-type",
              f"RandomPoisson takes rates of type bf16, f16, f32 or f64, found {input.etype}",
              port=self.port("input"))
        if input.shape.rank_is_static:
            check(input.shape.rank >= 1, "rates-rank", "RandomPoisson takes no scalar rates: the rank must be "
                  "1 or more", port=self.port("input"))
        return TensorInfo(input.etype, input.shape)

    def compute(self, input: np.ndarray) -> np.ndarray:
        rates = np.asarray(input, dtype=np.float64).reshape(-1)
        invalid = ~(rates >= 0)
        if invalid.any():
            where = [int(i) for i in np.unravel_index(int(np.argmax(invalid)), input.shape)]
            raise ExecutionError(f"rate {input[tuple(where)]} at {where} is not a valid Poisson rate (negative "
                                 f"or NaN)", port=self.port("input"), label="rate-value")
        a = self.attrs
        counts = poisson_counts(rates, a.global_seed, a.op_seed, a.alignment).reshape(input.shape)
        etype = ElementType.from_dtype(input.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            if etype in (ElementType.f16, ElementType.bf16):
                return round16(counts.astype(np.float32), etype)
            return counts.astype(input.dtype)
