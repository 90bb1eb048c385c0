"""The element-wise activations as rows of one table: Relu-1, Sigmoid-1, HSigmoid-5, HSwish-4,
Mish-4, SoftPlus-4, SoftSign-9, Elu-1, Clamp-1, Gelu-2 and Gelu-7.

Relu and Clamp take any numeric type; the others take floating-point types only. f16 and bf16
(and the 8-bit floats) are computed in f32 and rounded once; f32 and f64 in their own type.

Where a formula of the spec loses the value it defines to cancellation or overflow, the kernel
computes the same mathematical value another way: Elu's e^x - 1 as expm1, SoftPlus's
log(e^x + 1) as log1p(e^-|x|) + max(x, 0), Gelu's 1 + erf(x/sqrt 2) as erfc(-x/sqrt 2), and
Gelu's tanh form 0.5 * (1 + tanh u) as the equal 1 / (1 + e^-2u). OpenVINO's core reference and
its CPU plugin evaluate the formulas as written, so for very negative inputs (where those
values are tiny) they answer 0 or a value with few correct digits; the tests compare those
inputs with an absolute tolerance.

Choices where the spec says nothing, each following OpenVINO's core reference:
  * Relu is `x > 0 ? x : 0`: NaN and -0.0 give +0.0.
  * SoftSign of +-inf is NaN (inf / inf, the formula evaluated in IEEE arithmetic).
  * SoftPlus's threshold is the spec's 20 for f32 and 11 for f16; for the other types, which
    the spec gives none for, it is log(max of T) as in the reference (88.72 for bf16, 709.78
    for f64). At and above the threshold the result is x itself; below it, log(e^x + 1)
    rounded once.
  * Clamp's min and max for integer inputs: min is rounded up and max down (the spec's rule),
    then saturated to the type's range (the reference's rule for values past it). The result
    is then the spec's min(max(x, min), max), so when rounding leaves min above max (min=0.2,
    max=0.8) every element becomes max. The core reference tests `x < min` first and gives
    min for the elements below it instead; see the departures.
  * Clamp keeps NaN (neither comparison holds), as the reference does; the CPU plugin gives min.
  * HSigmoid keeps NaN, as the reference does; the CPU plugin gives 0.
  * Gelu(+inf) is +inf and Gelu(-inf) NaN (-inf * 0), as the formula gives in IEEE arithmetic and
    the reference computes; the CPU plugin gives NaN for +inf too. Mish, HSwish and Swish of
    -inf are NaN for the same reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Annotated, Literal

import ml_dtypes
import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from irscatter.ir.element_types import ElementType
from irscatter.ops.activation import gelu_polynomial
from irscatter.ops.base import Lower, OpAttrs
from irscatter.ops.common import accel, blocks, machine_code, special, threads
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.special import ndtr
from irscatter.ops.elementwise.table import Row, declare
from irscatter.ops.elementwise.unary import UnaryElementwise


def _float_kernel(formula):
    """A kernel of floats: `formula` on the input in its compute dtype, rounded back once."""
    def kernel(x: np.ndarray, **attrs) -> np.ndarray:
        etype = ElementType.from_dtype(x.dtype)
        work = np.asarray(x, dtype=compute_dtype(etype))
        with np.errstate(all="ignore"):
            return from_compute(np.asarray(formula(work, **attrs), dtype=work.dtype), etype)
    kernel.__name__ = formula.__name__
    kernel.__doc__ = formula.__doc__
    return kernel


# --- no attributes ------------------------------------------------------------------------------


def relu(x: np.ndarray) -> np.ndarray:
    """`x > 0 ? x : 0`, in the input's type (integers too). `fmax` passes over NaN (giving 0) and
    may keep -0.0; adding +0.0 turns that into 0.0 and changes nothing else. Twice as fast as a
    comparison and a select."""
    zero = np.zeros((), x.dtype)
    if x.dtype.kind in "fiub":  # numpy's own types: fmax is quiet on NaN
        out = np.asarray(np.fmax(x, zero))  # a 0-d input gives a scalar
    else:  # ml_dtypes' bf16 and f8 types flag NaN as invalid
        with np.errstate(invalid="ignore"):
            out = np.asarray(np.fmax(x, zero))
    return np.add(out, zero, out=out)


@blocks.by_blocks(work=blocks.PASSES_WORK)
@_float_kernel
def sigmoid(x):
    """1 / (1 + e^-x), each step into the first one's array (the same operations as written out)."""
    t = np.negative(x, out=np.empty_like(x))  # (an array for a 0-d x too, where numpy gives a scalar)
    np.exp(t, out=t)
    np.add(1, t, out=t)
    return np.divide(1, t, out=t)


@_float_kernel
def hsigmoid(x):
    t = _clipped_shift(x)
    return np.divide(t, 6, out=t)


@_float_kernel
def hswish(x):
    t = _clipped_shift(x)
    np.multiply(x, t, out=t)
    return np.divide(t, 6, out=t)  # (x * m) / 6, the reference's order


def _clipped_shift(x):
    """min(max(x + 3, 0), 6), in one array of its own: each step writes over the last, where
    whole-array steps made an array each (the same operations, so the same values)."""
    t = np.add(x, 3, out=np.empty_like(x))
    np.maximum(t, 0, out=t)
    return np.minimum(t, 6, out=t)


def _softplus_exact(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


@blocks.by_blocks
@_float_kernel
def mish(x):
    return x * np.tanh(_softplus_exact(x))


# The spec's thresholds (f32, f16); other types use log(max of T), as OpenVINO's reference does.
_SOFTPLUS_THRESHOLD = {ElementType.f32: 20.0, ElementType.f16: 11.0}


@blocks.by_blocks
def softplus(x: np.ndarray) -> np.ndarray:
    etype = ElementType.from_dtype(x.dtype)
    threshold = _SOFTPLUS_THRESHOLD.get(etype)
    if threshold is None:
        threshold = math.log(float(ml_dtypes.finfo(x.dtype).max))
    work = np.asarray(x, dtype=compute_dtype(etype))
    with np.errstate(all="ignore"):
        out = np.where(work >= threshold, work, _softplus_exact(work))
    return from_compute(np.asarray(out, dtype=work.dtype), etype)


@_float_kernel
def softsign(x):
    return x / (1 + np.abs(x))


# --- with attributes ----------------------------------------------------------------------------


class EluAttrs(OpAttrs):
    alpha: Annotated[float, Field(ge=0)]  # the spec: a non-negative number, required


@blocks.by_blocks
@_float_kernel
def elu(x, *, alpha: float):
    return np.where(x > 0, x, np.asarray(alpha, x.dtype) * np.expm1(x))


class ClampAttrs(OpAttrs):
    min: float
    max: float

    @field_validator("max")
    @classmethod
    def _ordered(cls, value: float, info: ValidationInfo) -> float:
        low = info.data.get("min")
        if low is not None and not low <= value:
            raise ValueError(f"max must not be less than min ({low})")
        return value


def _integer_bounds(dtype: np.dtype, low: float, high: float) -> tuple[int, int]:
    info = ml_dtypes.iinfo(dtype)

    def saturate(value: float) -> int:
        if value <= info.min:
            return int(info.min)
        if value >= info.max:
            return int(info.max)
        return int(value)

    return saturate(math.ceil(low) if math.isfinite(low) else low), \
        saturate(math.floor(high) if math.isfinite(high) else high)


def clamp(x: np.ndarray, *, min: float, max: float) -> np.ndarray:
    """min(max(x, min), max), each as a comparison that keeps x when it does not hold (NaN)."""
    etype = ElementType.from_dtype(x.dtype)
    if etype.is_integral:
        low, high = (np.asarray(v, x.dtype) for v in _integer_bounds(x.dtype, min, max))
        work = x
    else:
        work = np.asarray(x, dtype=compute_dtype(etype))
        with np.errstate(over="ignore"):
            low, high = np.asarray(min, work.dtype), np.asarray(max, work.dtype)
    raised = np.where(work < low, low, work)
    out = np.where(raised > high, high, raised)
    return out if etype.is_integral else from_compute(np.asarray(out, dtype=work.dtype), etype)


# The compiled Gelu's weight of an element for `threads.parts`: a few ns a core, about a hundred
# multiply-adds, where numpy's path weighs SPECIAL_FUNCTION_WORK.
GELU_COMPILED_WORK = 128
GELU_KERNELS = "irscatter.ops.activation.gelu_kernels"


# Elements of a layer from which its call, numba's loop not loaded, loads the compiled loop's
# kept machine code (`machine_code`): that costs some tens of milliseconds once a process, a
# few layers' worth of numpy's path at this size. Once loaded, every layer takes it.
KEPT_ELEMENTS = 1 << 18


def gelu_erf(x: np.ndarray, *, compiled: bool = False, first_call: bool = False) -> np.ndarray:
    """x * Phi(x) = x * erfc(-x / sqrt 2) / 2. An input type f32 holds gets `gelu_polynomial`'s
    result (the f64 value rounded once to f32, then to its own type), by one of four paths
    with the same bits: the compiled loop of `gelu_kernels` once numba's is loaded; else, while
    no compiled loop has set numba up, that loop's machine code where an earlier process kept it
    (`machine_code`; loaded by a layer of KEPT_ELEMENTS or more, or one that would load numba's;
    once numba is up, its dispatch costs less a call); with `compiled` (numba to be used),
    numba's loop; on a layer's `first_call` while scipy.special is not imported, numpy's
    polynomial, which spares a model run once that import (it takes longer than most models'
    whole run); otherwise scipy's normal distribution function, faster in numpy. f64 is
    scipy's function times x."""
    if x.dtype == np.float64:
        return _gelu_erf_f64(x)
    enabled = accel.enabled()
    if accel.forced() or enabled and accel.loaded(GELU_KERNELS):
        return _gelu_erf_compiled(x)
    kept_loop = gelu_polynomial.KEPT_LOOP
    if enabled and not accel.warm() and (x.size >= KEPT_ELEMENTS or compiled or machine_code.loaded(kept_loop)):
        kept = machine_code.load(kept_loop)
        if kept is not None:  # (the loop's code without numba's import: see `machine_code`)
            return _gelu_erf_by_loop(x, partial(_call_kept, kept))
    if compiled and enabled:
        return _gelu_erf_compiled(x)
    return _gelu_erf_numpy(x, by_scipy=not first_call or special.imported())


@blocks.by_blocks(work=blocks.SPECIAL_FUNCTION_WORK)
def _gelu_erf_f64(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = np.asarray(ndtr(x))  # a new array (a 0-d one for a scalar): the product may take its place
        np.multiply(out, x, out=out)
    return out


@blocks.by_blocks(work=blocks.SPECIAL_FUNCTION_WORK)
def _gelu_erf_numpy(x: np.ndarray, *, by_scipy: bool) -> np.ndarray:
    etype = ElementType.from_dtype(x.dtype)
    with np.errstate(invalid="ignore"):  # (a signalling NaN's widening flags it as invalid)
        work = np.asarray(x, dtype=np.float32)  # exact: every type but f64 fits in f32
    return from_compute(gelu_polynomial.rounded(work, by_scipy=by_scipy), etype)


def _gelu_erf_compiled(x: np.ndarray) -> np.ndarray:
    """numba's loop, kept as machine code for later processes the first time a process uses it."""
    from irscatter.ops.activation import gelu_kernels  # (imports numba: only when used)

    gelu_kernels.keep_loops()
    return _gelu_erf_by_loop(x, gelu_kernels.gelu_f32)


def _gelu_erf_by_loop(x: np.ndarray, loop: Callable[[np.ndarray, np.ndarray, np.ndarray], int]) -> np.ndarray:
    """The compiled loop, numba's or its kept machine code (on the thread policy's parts of a
    large input), then `exact` for the elements the loop leaves to it."""
    etype = ElementType.from_dtype(x.dtype)
    with np.errstate(invalid="ignore"):  # (a signalling NaN stays a NaN)
        work = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)  # exact: every type but f64 fits in f32
    out = np.empty(work.size, np.float32)
    unsure = np.empty(work.size, np.bool_)
    spans = threads.spans(work.size, threads.parts(work.size * GELU_COMPILED_WORK))
    threads.run([partial(_compiled_part, loop, work[lo:hi], out[lo:hi], unsure[lo:hi]) for lo, hi in spans])
    return from_compute(out.reshape(x.shape), etype)


def _call_kept(kept: Callable[..., int], x: np.ndarray, out: np.ndarray, unsure: np.ndarray) -> int:
    """The kept loop on contiguous 1-D arrays (ctypes lets go of the GIL for the call)."""
    return kept(x.ctypes.data, out.ctypes.data, unsure.ctypes.data, x.size)


def _compiled_part(loop: Callable[..., int], work: np.ndarray, out: np.ndarray, unsure: np.ndarray) -> None:
    """One part of `_gelu_erf_by_loop`: the `loop` (numba's or the kept one), then `exact` for
    the part's few elements it leaves (found while the part's flags are in its core's cache,
    and only when there are some)."""
    if loop(work, out, unsure):
        where = np.flatnonzero(unsure)
        out[where] = gelu_polynomial.exact(work[where])


@blocks.by_blocks(work=blocks.PASSES_WORK)
@_float_kernel
def gelu_tanh(x):
    """x / (1 + e^(-2u)) with u = sqrt(2 / pi) * (x + 0.044715 * x * x * x): 0.5 * (1 + tanh u)
    is 1 / (1 + e^(-2u)), which keeps its digits where tanh u is near -1. The operations of
    that formula as written, in that order, each into the first one's array."""
    t = np.multiply(0.044715, x, out=np.empty_like(x))  # (an array for a 0-d x too)
    t *= x
    t *= x
    np.add(x, t, out=t)
    np.multiply(_SQRT_2_OVER_PI, t, out=t)
    np.multiply(-2, t, out=t)
    np.exp(t, out=t)
    np.add(1, t, out=t)
    return np.divide(x, t, out=t)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


class GeluAttrs(OpAttrs):
    approximation_mode: Annotated[Literal["erf", "tanh"], Lower] = "erf"


def gelu(x: np.ndarray, *, approximation_mode: str, compiled: bool = False, first_call: bool = False) -> np.ndarray:
    if approximation_mode == "tanh":
        return gelu_tanh(x)
    return gelu_erf(x, compiled=compiled, first_call=first_call)


class GeluOp(UnaryElementwise, accel.LoadsOnSecondCall):
    """Gelu's versions. A layer's calls take the compiled loop of the erf form (`gelu_erf`) from
    its second call on, or from its first once the loop is loaded: loading numba and the loop
    takes longer than a model's Gelu layers take on numpy's path, so a model run once does not
    wait for it, and the runs after the first gain it. A small layer does not load it (it would
    save microseconds a call), but takes it once loaded (`accel.loads`). For the same reason a
    layer's first call on numpy's path takes the polynomial, not scipy's function, unless
    scipy.special is imported already."""

    def compute(self, x: np.ndarray) -> np.ndarray:  # type: ignore[override]
        first_call = not self.called
        compiled = self.takes_compiled(GELU_KERNELS, x.size)
        return self.row.kernel(x, compiled=compiled, first_call=first_call, **self.kernel_args)


OPS = declare(UnaryElementwise, (
    Row("Relu", 1, relu, doc="Relu-1: max(0, x) of any numeric type; NaN gives 0 (x > 0 ? x : 0)."),
    Row("Sigmoid", 1, sigmoid, accepts="float", doc="Sigmoid-1: 1 / (1 + e^-x)."),
    Row("HSigmoid", 5, hsigmoid, accepts="float", doc="HSigmoid-5: min(max(x + 3, 0), 6) / 6."),
    Row("HSwish", 4, hswish, accepts="float", doc="HSwish-4: x * min(max(x + 3, 0), 6) / 6."),
    Row("Mish", 4, mish, accepts="float", doc="Mish-4: x * tanh(SoftPlus(x))."),
    Row("SoftPlus", 4, softplus, accepts="float",
        doc="SoftPlus-4: x at or above the type's threshold, log(e^x + 1) below it."),
    Row("SoftSign", 9, softsign, accepts="float", doc="SoftSign-9: x / (1 + |x|); +-inf give NaN."),
    Row("Elu", 1, elu, accepts="float", attrs=EluAttrs, doc="Elu-1: x if x > 0, else alpha * (e^x - 1)."),
    Row("Clamp", 1, clamp, attrs=ClampAttrs,
        doc="Clamp-1: min(max(x, min), max); integer inputs round min up and max down."),
))
OPS |= declare(GeluOp, (
    Row("Gelu", 2, gelu_erf, accepts="float", doc="Gelu-2: x * Phi(x), the erf form."),
    Row("Gelu", 7, gelu, accepts="float", attrs=GeluAttrs,
        doc="Gelu-7: x * Phi(x) by erf, or its tanh approximation (approximation_mode)."),
))
