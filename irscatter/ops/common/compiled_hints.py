"""What the compiled loops (numba) learn of the CPU and ask of LLVM beyond numba's own options:
whether the CPU numba compiles for has a feature, and 512-bit vectors for a function that gains
from them. Imported only by modules that import numba themselves.

LLVM holds Intel's AVX-512 CPUs to 256-bit vectors unless a function asks for wider ones (wide
vectors once slowed those CPUs' clock); a loop that converts or computes much per element can
run faster with them, and each loop that asks says why.
"""

from __future__ import annotations

import os

import numba
from llvmlite import ir
from numba.extending import intrinsic


def host_has(feature: str) -> bool:
    """Whether numba compiles for a CPU with `feature` (llvmlite's name). A CPU set by
    NUMBA_CPU_NAME or NUMBA_CPU_FEATURES may not be this one: then no."""
    if os.environ.get("NUMBA_CPU_NAME") or os.environ.get("NUMBA_CPU_FEATURES"):
        return False
    try:
        from llvmlite import binding

        return bool(binding.get_host_cpu_features().get(feature, False))
    except (RuntimeError, AttributeError):
        return False


WIDE_VECTORS = host_has("avx512f")


def ask_wide_vectors(builder, required: bool = False) -> None:  # pragma: no cover - compiled
    """Lets LLVM use 512-bit registers in the function `builder` writes (`required`: its IR
    holds 512-bit vectors of its own, which LLVM would otherwise split in two). llvmlite's
    attribute set refuses attributes it does not list; a string attribute is written into the
    IR as it is, and LLVM reads these per function. (Where llvmlite keeps attributes otherwise,
    the function keeps LLVM's width.)"""
    wanted = ['"prefer-vector-width"="512"'] + (['"min-legal-vector-width"="512"'] if required else [])
    try:
        for attribute in wanted:
            set.add(builder.function.attributes, attribute)
    except TypeError:
        pass


def _prefer_wide(context, builder, signature, args):  # pragma: no cover - compiled
    ask_wide_vectors(builder)
    return context.get_dummy_value()


@intrinsic
def wide_vectors(typing_context):  # pragma: no cover - compiled
    """Lets LLVM vectorize the calling function's loops with 512-bit registers (call it first,
    where `WIDE_VECTORS`)."""
    return numba.types.none(), _prefer_wide


def _bits_to_double(context, builder, signature, args):  # pragma: no cover - compiled
    return builder.bitcast(args[0], ir.DoubleType())


@intrinsic
def double_from_bits(typing_context, bits):  # pragma: no cover - compiled
    """The f64 whose IEEE bits are the int64 `bits` (a reinterpretation, no conversion): 2^k as
    (k + 1023) << 52, where a library call would keep a loop from vectorizing."""
    return numba.types.float64(numba.types.int64), _bits_to_double
