"""The polynomial of Gelu's erf form (`irscatter/ops/activation/gelu_polynomial.py`): its fit, and
the check of its two paths against the result they stand for, over every f32 input.

    python tools/gelu_fit.py fit           # prints ERFCX_POWERS for gelu_polynomial.py
    python tools/gelu_fit.py check [--chunk-bits 24] [--first N --count M]

`fit` fits erfcx(t / sqrt 2) for t in [0, REACH], as a polynomial of degree DEGREE in
u = STRETCH * SCALE / (SCALE + t) - SHIFT (which maps that range onto [-1, 1]): a Chebyshev
least-squares fit on Chebyshev nodes, turned into powers of u for Horner's rule (its powers
are all below 1, so Horner's rule loses nothing that matters). It prints the coefficients, and
the largest relative error of the polynomial against scipy's erfcx on a dense grid of t.

`check` runs numpy's two paths (`gelu_polynomial.estimate`, the polynomial, and
`scipy_estimate`, scipy's normal distribution function) and, where numba is installed, the
compiled loop (`gelu_kernels.gelu_f32`), all without their fallback, on every one of the 2^32
f32 bit patterns, a chunk of 2^chunk_bits at a time, and the result itself (`exact`'s f64
value, the C library's erfc an element). For each path it counts the inputs where the path
said sure yet its bits differ from the result's (the proof needs none; a NaN's payload is not
compared) and the inputs it leaves to `exact`, and gives the largest relative difference
between its f64 product and the result's where x is in the polynomial's range and both are
normal numbers (which must stay well inside SLACK). It also counts the inputs where scipy's
product rounded as it is (the result's definition before the C library's erfc) has other
bits. Every f16 and bf16 input is an f32 one, so this covers them too. About eight
minutes per 2^30 inputs on one core (the result's erfc, one Python call an element, is most of
it); `--first` and `--count` (in chunks) split the work between processes.
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

    from irscatter.ops.activation import gelu_polynomial as k

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
    from irscatter.ops.activation import gelu_polynomial as k
    from irscatter.ops.common import accel

    paths = {"polynomial": k.estimate, "scipy": k.scipy_estimate}
    if accel.available():
        paths["compiled"] = _compiled_path
    chunks = 1 << (32 - chunk_bits)
    last = chunks if count is None else min(chunks, first + count)
    wrong = dict.fromkeys(paths, 0)
    unsure = dict.fromkeys(paths, 0)
    worst = dict.fromkeys(paths, 0.0)
    scipy_differs = 0
    started = time.perf_counter()
    for chunk in range(first, last):
        x = (np.arange(1 << chunk_bits, dtype=np.uint64) + (chunk << chunk_bits)).astype(np.uint32).view(np.float32)
        reference = _result(x)
        expected = reference.astype(np.float32)
        for name, path in paths.items():
            out, flags, product = path(x)
            sure = ~flags
            wrong[name] += int(np.count_nonzero(_differ(out, expected) & sure))
            unsure[name] += int(np.count_nonzero(flags))
            with np.errstate(all="ignore"):
                normal = (sure & (x > -k.REACH) & (np.abs(reference) >= np.finfo(np.float64).tiny)
                          & np.isfinite(reference))
                if normal.any():
                    worst[name] = max(worst[name], float(np.max(np.abs(product[normal] / reference[normal] - 1))))
        with np.errstate(all="ignore"):
            wide = x.astype(np.float64)
            scipy_differs += int(np.count_nonzero(_differ((_ndtr(wide) * wide).astype(np.float32), expected)))
        if (chunk - first) % 16 == 15:
            print(f"  to chunk {chunk}: {_summary(wrong, unsure, worst)}, scipy differs at {scipy_differs}", flush=True)
    print(f"chunks {first}..{last - 1} of {chunks}: {_summary(wrong, unsure, worst)} (slack {k.SLACK:.2e}); "
          f"scipy's rounding differs at {scipy_differs}; {time.perf_counter() - started:.0f} s")
    return 1 if any(wrong.values()) else 0


def _summary(wrong: dict, unsure: dict, worst: dict) -> str:
    return "; ".join(f"{name}: {wrong[name]} sure but wrong, {unsure[name]} left to exact, "
                     f"largest relative difference {worst[name]:.2e}" for name in wrong)


def _differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where two f32 arrays' bits differ, NaNs all alike (IEEE leaves a NaN's payload open)."""
    return (a.view(np.uint32) != b.view(np.uint32)) & ~(np.isnan(a) & np.isnan(b))


def _result(x: np.ndarray) -> np.ndarray:
    from irscatter.ops.activation import gelu_polynomial

    return gelu_polynomial.exact_f64(x)


def _compiled_path(x: np.ndarray):
    from irscatter.ops.activation import gelu_kernels

    out, flags, product = np.empty(x.size, np.float32), np.empty(x.size, np.bool_), np.empty(x.size)
    gelu_kernels.gelu_f32(x, out, flags, product)
    return out, flags, product


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
