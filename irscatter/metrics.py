"""How far one tensor is from another, and whether that is within tolerance: the one rule that
judges tensors everywhere (`compare` against another runtime, `run --expected` against saved
values, the judging of a reduced reproducer).

One rule judges every float element: it passes when it equals the reference (two NaNs are
equal, and so are infinities of one sign) or when

    |target - reference| <= atol * scale + rtol * |reference|,  scale = max(1, max |reference|)

The absolute term is measured against the tensor's largest finite magnitude (when that is
over 1), so that one tolerance fits a tensor of logits in the thousands and one of
probabilities: a sum of many products that cancels to near zero carries an error in
proportion to the products, not to the result. Values over a million times the tensor's median
magnitude do not count for that scale: an attention mask's -1e30, or a type's lowest value
standing for -inf, would otherwise allow any error at every other element. A NaN or an infinity
on one side only always fails. Integers, booleans and strings must be equal.

The presets follow the precision the target computes in: its inference precision hint (f32,
f16, bf16) and the tensor's own element type, whichever is coarser.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float

    def __str__(self) -> str:
        return f"rtol {self.rtol:.3g}, atol {self.atol:.3g}"


# Per precision: a few units of the precision's epsilon (f32 2^-23, f16 2^-10, bf16 2^-7), with
# room for the different summation orders and function approximations of a native kernel.
PRESETS: dict[str, Tolerance] = {
    "f64": Tolerance(1e-9, 1e-10),
    "f32": Tolerance(1e-4, 1e-5),
    "f16": Tolerance(1e-2, 2e-3),
    "bf16": Tolerance(5e-2, 1.6e-2),
    "f8": Tolerance(2.5e-1, 1.25e-1),
}
_COARSENESS = ["f64", "f32", "f16", "bf16", "f8"]


def precision_of(dtype: np.dtype) -> str | None:
    """The preset a float element type computes at; None for exact types."""
    dtype = np.dtype(dtype)
    name = dtype.name
    if name == "bfloat16":
        return "bf16"
    if name.startswith(("float8_", "float6_", "float4_")):  # ml_dtypes' small floats (not float64)
        return "f8"
    if dtype.kind != "f":
        return None
    return {8: "f64", 4: "f32", 2: "f16"}.get(dtype.itemsize, "f32")


def preset_for(dtype: np.dtype, target_precision: str = "f32") -> Tolerance | None:
    """The tolerance a tensor of `dtype` is judged by when the target computes at
    `target_precision`; None where it must be exact."""
    own = precision_of(dtype)
    if own is None:
        return None
    coarser = max(own, target_precision, key=_COARSENESS.index)
    return PRESETS[coarser]


@dataclass(frozen=True)
class TensorDiff:
    """One tensor of the target against irscatter's. `passed` is the verdict; the numbers are
    None where they do not apply (exact types, or a shape or type mismatch)."""

    shape: tuple[int, ...]
    dtype: str
    passed: bool
    tolerance: Tolerance | None  # None: compared exactly
    mismatches: int = 0  # elements outside the tolerance
    count: int = 0
    max_abs: float | None = None
    max_rel: float | None = None
    mean_abs: float | None = None
    cosine: float | None = None
    nrmse: float | None = None
    max_ulps: float | None = None
    # the largest |target - reference| / allowed over the elements: over 1 fails; inf for a NaN or
    # an infinity on one side only, or an error where nothing is allowed; 0 when every element equals
    worst_ratio: float | None = None
    worst: tuple[int, ...] | None = None  # where the largest excess over the tolerance is
    worst_target: object = None
    worst_reference: object = None
    nonfinite: str | None = None  # NaN or infinity on one side only: how many, and where first
    required: Tolerance | None = None  # the smallest atol (at the rtol used) and rtol (at the atol used) that pass
    problem: str | None = None  # a shape or element-type mismatch: nothing else was compared
    # (target, reference) as the report names them ("openvino:CPU", "irscatter"): the summary
    # gives each value beside its side's name; None: "target vs reference"
    sides: tuple[str, str] | None = None

    def values_at_worst(self) -> str:
        """Both sides' values where the worst element is, each named when the sides are."""
        if self.sides is None:
            return f"{str(self.worst_target)} vs {str(self.worst_reference)}"
        target, reference = self.sides
        return f"{reference} {str(self.worst_reference)}, {target} {str(self.worst_target)}"

    def summary(self) -> str:
        """One line: what differs and by how much."""
        if self.problem:
            return self.problem
        if self.tolerance is None:
            if self.passed:
                return "exact"
            return (f"{self.mismatches} of {self.count} elements differ; first at {list(self.worst or ())}: "
                    f"{self.values_at_worst()}")
        parts = [f"max abs {self.max_abs:.3g}", f"max rel {self.max_rel:.3g}", f"cosine {self.cosine:.6f}"]
        if self.max_ulps is not None:
            parts.append(f"{self.max_ulps:.0f} ulps")
        text = ", ".join(parts)
        if self.passed:
            return text
        text = f"{self.mismatches} of {self.count} outside {self.tolerance}; {text}"
        if self.worst is not None:
            text += f"; worst at {list(self.worst)}: {self.values_at_worst()}"
        if self.nonfinite:
            text += f"; {self.nonfinite}"
        if self.required is not None and math.isfinite(self.required.atol):
            text += f"; would pass with atol {self.required.atol:.3g} or rtol {self.required.rtol:.3g}"
        return text

    def to_json(self) -> dict:
        record = {k: getattr(self, k) for k in ("shape", "dtype", "passed", "mismatches", "count", "max_abs",
                                                 "max_rel", "mean_abs", "cosine", "nrmse", "max_ulps", "worst_ratio",
                                                 "nonfinite", "problem")}
        record["shape"] = list(self.shape)
        record["tolerance"] = None if self.tolerance is None else vars(self.tolerance)
        record["required"] = None if self.required is None else vars(self.required)
        record["worst"] = None if self.worst is None else list(self.worst)
        record["worst_target"] = _plain(self.worst_target)
        record["worst_reference"] = _plain(self.worst_reference)
        return {k: _finite_or_text(v) for k, v in record.items()}


def diff(target: np.ndarray, reference: np.ndarray, tolerance: Tolerance | None,
         sides: tuple[str, str] | None = None) -> TensorDiff:
    """`target` against `reference` under `tolerance` (None: exact); `sides` names the two
    (target, reference) in what the diff says."""
    target, reference = np.asarray(target), np.asarray(reference)
    shape, dtype = tuple(reference.shape), str(reference.dtype)
    if target.shape != reference.shape:
        return TensorDiff(shape, dtype, False, tolerance, sides=sides,
                          problem=mismatch("shape", list(target.shape), list(reference.shape), sides))
    if target.dtype != reference.dtype:
        return TensorDiff(shape, dtype, False, tolerance, sides=sides,
                          problem=mismatch("element type", target.dtype, reference.dtype, sides))
    if tolerance is None or precision_of(reference.dtype) is None:
        return replace(_exact(target, reference), sides=sides)
    # Values near the float limits (+-1e308) overflow the sums, squares and products of the
    # measures into inf, which is the answer the report gives: numpy's warnings say nothing more.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return replace(_inexact(target, reference, tolerance), sides=sides)


def mismatch(what: str, target: object, reference: object, sides: tuple[str, str] | None) -> str:
    """A shape or element type that differs, each side's named."""
    if sides is None:
        return f"{what} {target}, irscatter's is {reference}"
    return f"{what} {reference} in {sides[1]}, {target} in {sides[0]}"


def _exact(target: np.ndarray, reference: np.ndarray) -> TensorDiff:
    differs = np.asarray(target != reference)
    count = int(differs.size)
    if not differs.any():
        return TensorDiff(reference.shape, str(reference.dtype), True, None, count=count)
    first = tuple(int(i) for i in np.argwhere(differs)[0]) if differs.ndim else ()
    return TensorDiff(reference.shape, str(reference.dtype), False, None, mismatches=int(differs.sum()), count=count,
                      worst=first, worst_target=target[first], worst_reference=reference[first])


def _inexact(target: np.ndarray, reference: np.ndarray, tol: Tolerance) -> TensorDiff:
    g, w = target.astype(np.float64), reference.astype(np.float64)
    count = int(w.size)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    same = (g == w) | (nan_g & nan_w)
    one_sided = (nan_g != nan_w) | ((np.isinf(g) | np.isinf(w)) & ~same)
    scale = _scale(w)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        error = np.where(same | one_sided, 0.0, np.abs(g - w))
        allowed = tol.atol * scale + tol.rtol * np.abs(w)
        fails = one_sided | (error > allowed)
        relative = np.where(error > 0, error / np.abs(w), 0.0)
        ratio = np.where(one_sided, np.inf, np.where(error > 0, error / allowed, 0.0))
    both = np.isfinite(g) & np.isfinite(w)
    record: dict[str, Any] = dict(count=count, mismatches=int(fails.sum()))
    if count:
        # A NaN or an infinity on one side is an error no finite number measures: the maxima say
        # so (the other measures cover the elements finite on both sides).
        unmeasured = bool(one_sided.any())
        record.update(max_abs=math.inf if unmeasured else float(error.max()),
                      max_rel=math.inf if unmeasured else float(relative.max()), mean_abs=float(error.mean()),
                      cosine=_cosine(g[both], w[both]), nrmse=_nrmse(g[both], w[both]),
                      max_ulps=_max_ulps(target, reference), worst_ratio=float(ratio.max()))
    else:
        record.update(max_abs=0.0, max_rel=0.0, mean_abs=0.0, cosine=1.0, nrmse=0.0, max_ulps=0.0, worst_ratio=0.0)
    passed = record["mismatches"] == 0
    if not passed:
        excess = np.where(fails, np.where(one_sided, np.inf, error - allowed), -np.inf)
        worst = np.unravel_index(int(np.argmax(excess)), excess.shape) if excess.ndim else ()
        record.update(worst=tuple(int(i) for i in worst), worst_target=target[worst], worst_reference=reference[worst])
        if one_sided.any():
            first = tuple(int(i) for i in np.argwhere(one_sided)[0]) if one_sided.ndim else ()
            record["nonfinite"] = f"{int(one_sided.sum())} NaN or infinite on one side only, first at {list(first)}"
        with np.errstate(invalid="ignore", divide="ignore"):
            need_atol = float(np.max(np.maximum(error - tol.rtol * np.abs(w), 0.0))) / scale
            need_rtol = float(np.max(np.where(error > tol.atol * scale,
                                              (error - tol.atol * scale) / np.abs(w), 0.0)))
        if one_sided.any():
            need_atol = need_rtol = math.inf
        record["required"] = Tolerance(need_rtol, need_atol)
    return TensorDiff(reference.shape, str(reference.dtype), passed, tol, **record)


# How far above the median magnitude a value may be and still set the absolute tolerance's scale.
_OUTLIER_FACTOR = 1e6


def _scale(w: np.ndarray) -> float:
    """The magnitude the absolute tolerance is measured against: the largest finite one, over 1,
    leaving out outliers a million times the median (see the module's docstring)."""
    magnitudes = np.abs(w[np.isfinite(w)])
    if not magnitudes.size:
        return 1.0
    typical = max(1.0, float(np.median(magnitudes)))
    usual = magnitudes[magnitudes <= typical * _OUTLIER_FACTOR]
    return max(1.0, float(usual.max()) if usual.size else typical)


def _cosine(g: np.ndarray, w: np.ndarray) -> float:
    ng, nw = float(np.linalg.norm(g)), float(np.linalg.norm(w))
    if ng == 0.0 and nw == 0.0:
        return 1.0
    if ng == 0.0 or nw == 0.0 or not (math.isfinite(ng) and math.isfinite(nw)):
        return 0.0 if (ng == 0.0) != (nw == 0.0) else float("nan")
    return float(np.dot(g.ravel(), w.ravel()) / (ng * nw))


def _nrmse(g: np.ndarray, w: np.ndarray) -> float:
    """The root-mean-square error over the reference's root-mean-square value."""
    if not g.size:
        return 0.0
    rmse = float(np.sqrt(np.mean((g - w) ** 2)))
    rms = float(np.sqrt(np.mean(w ** 2)))
    if rms == 0.0:
        return 0.0 if rmse == 0.0 else math.inf
    return rmse / rms


def _max_ulps(target: np.ndarray, reference: np.ndarray) -> float | None:
    """The largest distance in units in the last place of the reference's type, NaN positions
    aside (a NaN on one side only is reported apart); None for the 8-bit float types, whose
    ulps say little."""
    if reference.dtype.itemsize not in (2, 4, 8):
        return None
    distance = ulp_distance(target, reference)
    nan = np.isnan(target.astype(np.float64)) | np.isnan(reference.astype(np.float64))
    distance = np.where(nan, 0.0, distance)
    return float(distance.max()) if distance.size else 0.0


def _plain(value: object) -> object:
    if value is None:
        return None
    if isinstance(value, np.generic):
        if value.dtype.kind in "biu":
            return int(value)
        if value.dtype.kind in "TUSO":
            return str(value)
        return float(value)
    return value


def _finite_or_text(value: object) -> object:
    """JSON has no NaN or infinity: those are written as the strings "nan", "inf", "-inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite_or_text(v) for k, v in value.items()}
    return value


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """How many representable values of `want`'s float type lie between each pair (0 for equal
    values, including two NaNs and -0.0 against 0.0), as float64."""
    width = np.dtype(want.dtype).itemsize
    signed = {2: np.int16, 4: np.int32, 8: np.int64}[width]

    def ordered(a: np.ndarray) -> np.ndarray:
        bits = np.ascontiguousarray(a.astype(want.dtype)).view(signed).astype(np.float64)
        return np.where(bits < 0, -(bits + 2.0 ** (8 * width - 1)), bits)  # a monotonic integer line

    distance = np.abs(ordered(got) - ordered(want))
    both_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    return np.where(both_nan, 0.0, distance)
