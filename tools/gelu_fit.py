"""The polynomial of Gelu's compiled loop (`irscatter/ops/activation/gelu_kernels.py`): its fit,
and the check of the loop against scipy's path over every f32 input.

    python tools/gelu_fit.py fit           # prints ERFCX_POWERS for gelu_kernels.py
    python tools/gelu_fit.py check [--chunk-bits 24] [--first N --count M]

`fit` fits erfcx(t / sqrt 2) for t in [0, REACH], as a polynomial of degree DEGREE in
u = STRETCH * SCALE / (SCALE + t) - SHIFT (which maps that range onto [-1, 1]): a Chebyshev
least-squares fit on Chebyshev nodes, turned into powers of u for Horner's rule (its powers
are all below 1, so Horner's rule loses nothing that matters). It prints the coefficients, and
the largest relative error of the polynomial against scipy's erfcx on a dense grid of t.

`check` runs the compiled loop (`gelu_kernels.gelu_f32`, without its fallback) and scipy's path
(`gelu_erf` with numba kept off) on every one of the 2^32 f32 bit patterns, a chunk of 2^chunk_bits
at a time, and counts the inputs where the loop said sure yet its bits differ from scipy's (the
proof needs none; a NaN's payload is not compared), the inputs it leaves to scipy, and the
largest relative difference between its f64 product and scipy's where x is in the polynomial's
range and both are normal numbers (which must stay well inside SLACK). Every f16 and bf16 input
is an f32 one, so this covers them too. About a minute per 2^30 inputs on one core; `--first`
and `--count` (in chunks) split the work between processes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEGREE = 17
NODES = 6000


def fit() -> None:
    from numpy.polynomial import chebyshev
    from scipy import special

    from irscatter.ops.activation import gelu_kernels as k

    nodes = np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)
    s = (nodes + k.SHIFT) / k.STRETCH
    t = k.SCALE * (1 - s) / s
    series = chebyshev.chebfit(nodes, special.erfcx(t / np.sqrt(2)), DEGREE)
    powers = chebyshev.cheb2poly(series)
    grid = np.linspace(0, k.REACH, 1_000_001)
    u = k.STRETCH * (k.SCALE / (k.SCALE + grid)) - k.SHIFT
    value = np.zeros_like(u)
    for p in powers[::-1]:
        value = value * u + p
    error = np.max(np.abs(value / special.erfcx(grid / np.sqrt(2)) - 1))
    print(f"# degree {DEGREE}, largest relative error on [0, {k.REACH}]: {error:.2e}")
    print("ERFCX_POWERS = (")
    for p in powers:
        print(f"    {float(p)!r},")
    print(")")


def check(chunk_bits: int, first: int, count: int | None) -> int:
    from irscatter.ops.activation import gelu_kernels as k
    from irscatter.ops.activation.elementwise import gelu_erf
    from irscatter.ops.common import accel

    chunks = 1 << (32 - chunk_bits)
    last = chunks if count is None else min(chunks, first + count)
    wrong = unsure = 0
    worst = 0.0
    started = time.perf_counter()
    for chunk in range(first, last):
        x = (np.arange(1 << chunk_bits, dtype=np.uint64) + (chunk << chunk_bits)).astype(np.uint32).view(np.float32)
        out, flags, product = np.empty(x.size, np.float32), np.empty(x.size, np.bool_), np.empty(x.size)
        k.gelu_f32(x, out, flags, product)
        with accel.use("numpy"):
            expected = gelu_erf(x)
        sure = ~flags
        differ = (out.view(np.uint32) != expected.view(np.uint32)) & ~(np.isnan(out) & np.isnan(expected))
        wrong += int(np.count_nonzero(differ & sure))  # (a NaN's payload is not compared: IEEE leaves it open)
        unsure += int(np.count_nonzero(flags))
        with np.errstate(all="ignore"):
            reference = x.astype(np.float64) * _ndtr(x.astype(np.float64))
            normal = sure & (x > -k.REACH) & (np.abs(reference) >= np.finfo(np.float64).tiny) & np.isfinite(reference)
            if normal.any():
                worst = max(worst, float(np.max(np.abs(product[normal] / reference[normal] - 1))))
        if (chunk - first) % 16 == 15:
            print(f"  to chunk {chunk}: {wrong} sure but wrong, {unsure} left to scipy, {worst:.2e}", flush=True)
    print(f"chunks {first}..{last - 1} of {chunks}: {wrong} sure but wrong, {unsure} left to scipy, "
          f"largest relative difference of the sure f64 products {worst:.2e} (slack {k.SLACK:.2e}), "
          f"{time.perf_counter() - started:.0f} s")
    return 1 if wrong else 0


def _ndtr(x: np.ndarray) -> np.ndarray:
    from scipy import special

    return special.ndtr(x)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=("fit", "check"))
    parser.add_argument("--chunk-bits", type=int, default=24)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--count", type=int)
    args = parser.parse_args()
    if args.what == "fit":
        fit()
        return 0
    return check(args.chunk_bits, args.first, args.count)


if __name__ == "__main__":
    raise SystemExit(main())
