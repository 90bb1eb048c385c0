"""How tensors are judged: the tolerance presets of the precision a target computes in, the
overrides that replace them for the tensors a pattern picks, and the precision a target
really ran, which the presets and irscatter's emulation follow.

The rule itself (what is within a tolerance) is `irscatter.metrics`; this is which tolerance
applies to which tensor of a comparison.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from irscatter.debug.extract import tensor_key
from irscatter.errors import PATTERN_ERRORS, Argument, UsageError, elide
from irscatter.ir.element_types import ElementType
from irscatter.metrics import PRESETS, TensorDiff, Tolerance, diff, mismatch, precision_of, preset_for, ulp_distance
from irscatter.runtime.interpreter import CompiledModel
from irscatter.targets.protocol import Target


def at_device_precision(target: Target, tolerances: Tolerances) -> Tolerances:
    """`tolerances` at the precision `target` really infers in, where it can say: judging an
    f32 answer with f16's presets would hide a fault, and a bf16 answer with f16's would
    report one that is not there."""
    ran = getattr(target, "ran_precision", None)
    precision = ran() if callable(ran) else tolerances.precision
    return tolerances if precision == tolerances.precision else replace(tolerances, precision=precision)


def emulated_at_device_precision(target: Target, emulated: str | None) -> str | None:
    """The precision to emulate irscatter's values in, `emulated` having been asked for the
    target's own precision: the one the target really runs (none when that is f32)."""
    ran = getattr(target, "ran_precision", None)
    if emulated is None or not callable(ran) or getattr(target, "precision", None) != emulated:
        return emulated
    precision = ran()
    return None if precision == "f32" else precision

@dataclass(frozen=True)
class Tolerances:
    """How tensors are judged: the presets of the target's precision, unless `rtol`/`atol`
    are given; `overrides` are (pattern, tolerance) pairs whose pattern (a regular
    expression, searched in the tensor's `"<layer name>:<port>"` key) picks the tensors they
    apply to, the last matching one winning."""

    precision: str = "f32"
    rtol: float | None = None
    atol: float | None = None
    overrides: tuple[tuple[re.Pattern[str], Tolerance], ...] = ()

    @classmethod
    def parse(cls, precision: str = "f32", rtol: float | None = None, atol: float | None = None,
              overrides: Iterable[str] = ()) -> Tolerances:
        """Tolerances with their overrides spelled `PATTERN=RTOL[,ATOL]` (see `parse_override`)."""
        return cls(precision, rtol, atol, tuple(parse_override(text) for text in overrides))

    def for_tensor(self, key: str, dtype: np.dtype) -> Tolerance | None:
        preset = preset_for(dtype, self.precision)
        if preset is None:
            return None  # integers, booleans and strings are exact whatever is asked
        chosen = Tolerance(preset.rtol if self.rtol is None else self.rtol,
                           preset.atol if self.atol is None else self.atol)
        for pattern, tolerance in self.overrides:
            if pattern.search(key):
                chosen = tolerance
        return chosen


_OVERRIDES = Argument("overrides")  # the argument of `Tolerances.parse` its messages speak of


def parse_override(text: str) -> tuple[re.Pattern[str], Tolerance]:
    """`PATTERN=RTOL[,ATOL]`, one of the `overrides` of `Tolerances.parse`."""
    pattern, sep, numbers = text.rpartition("=")
    try:
        values = [float(v) for v in numbers.split(",")] if sep else []
        compiled = re.compile(pattern)
    except (ValueError, *PATTERN_ERRORS) as e:
        raise UsageError(_OVERRIDES, f" {elide(text)}: expected PATTERN=RTOL[,ATOL] ({e})", value=text) from None
    if not sep or not pattern or not 1 <= len(values) <= 2 or not all(v >= 0 and np.isfinite(v) for v in values):
        raise UsageError(_OVERRIDES, f" {text}: expected PATTERN=RTOL[,ATOL] with tolerances of at least 0",
                         value=text)
    return compiled, Tolerance(values[0], values[1] if len(values) > 1 else values[0])


def check_overrides(tolerances: Tolerances, keys: Iterable[str]) -> None:
    """Refuse an override's pattern that picks none of `keys` (the tensors to be judged): a typo
    would otherwise leave the tensor it meant under the preset, silently."""
    keys = list(keys)
    for pattern, _ in tolerances.overrides:
        if not any(pattern.search(key) for key in keys):
            raise UsageError(_OVERRIDES, f' {pattern.pattern}=...: the pattern matches no tensor ("<layer name>:'
                             '<port id>") to be compared', value=pattern.pattern)


def check_model_overrides(tolerances: Tolerances, compiled: CompiledModel) -> None:
    """`check_overrides` against every tensor of `compiled`."""
    check_overrides(tolerances, (tensor_key(compiled, src) for src in compiled.graph.tensors()))



# --- values of two element types ---------------------------------------------------------------


def judge_across_types(theirs: np.ndarray, ours: np.ndarray, tolerances: Tolerances, key: str,
                       sides: tuple[str, str]) -> tuple[TensorDiff, tuple[str, str] | None]:
    """`theirs` against the reference `ours` where their element types may differ (an f16
    value against an f32 one): `theirs` converted to `ours`'s type where that changes no
    value's meaning (any number to a float; integers to one another when none changes), judged
    by the coarser of the two types' tolerances. The diff, and (their type, our type) when
    `theirs` was converted; `sides` names the two, (target, reference)."""
    theirs, ours = np.asarray(theirs), np.asarray(ours)
    tolerance = _looser(tolerances.for_tensor(key, ours.dtype), tolerances.for_tensor(key, theirs.dtype))
    if theirs.shape != ours.shape:
        return TensorDiff(ours.shape, str(ours.dtype), False, tolerance, sides=sides,
                          problem=mismatch("shape", list(theirs.shape), list(ours.shape), sides)), None
    if theirs.dtype != ours.dtype:
        converted = _converted(theirs, ours.dtype)
        if converted is None:
            problem = mismatch("element type", type_name(theirs.dtype), type_name(ours.dtype), sides)
            return TensorDiff(ours.shape, str(ours.dtype), False, tolerance, sides=sides, problem=problem), None
        judged = diff(converted, ours, tolerance, sides)
        return _ulps_in(judged, theirs, ours), (type_name(theirs.dtype), type_name(ours.dtype))
    return diff(theirs, ours, tolerance, sides), None


def _ulps_in(judged: TensorDiff, narrow: np.ndarray, ours: np.ndarray) -> TensorDiff:
    """`judged` with its ulps counted in `narrow`'s float type where that is the coarser of the
    two (an f16 value widened to f32 is a few f16 ulps off, not millions of f32 ones)."""
    kept, reference = precision_of(narrow.dtype), precision_of(ours.dtype)
    coarser = kept is not None and reference is not None and list(PRESETS).index(kept) > list(PRESETS).index(reference)
    if judged.max_ulps is None or not coarser or narrow.dtype.itemsize != 2:
        return judged
    with np.errstate(over="ignore", invalid="ignore"):
        distance = ulp_distance(narrow, ours.astype(narrow.dtype))
    nan = np.isnan(narrow.astype(np.float64)) | np.isnan(ours.astype(np.float64))
    distance = np.where(nan, 0.0, distance)
    return replace(judged, max_ulps=float(distance.max()) if distance.size else 0.0)


def _looser(first: Tolerance | None, second: Tolerance | None) -> Tolerance | None:
    """The coarser of the two types' tolerances; exact when the reference's type is exact."""
    if first is None or second is None:
        return first
    return max(first, second, key=lambda t: (t.rtol, t.atol))


def _converted(value: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """`value` in `dtype`: any number to a float; integers and booleans to one another when
    no value changes; None otherwise (strings, a float to an integer)."""
    numeric = value.dtype.kind in "biuf" or precision_of(value.dtype) is not None
    if not numeric:
        return None
    if precision_of(dtype) is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            return value.astype(dtype)
    if value.dtype.kind not in "biu" or np.dtype(dtype).kind not in "biu":
        return None
    converted = value.astype(dtype)
    return converted if np.array_equal(converted.astype(value.dtype), value) else None


def type_name(dtype: np.dtype) -> str:
    """An element type as OpenVINO names it (f16, bf16, i64), else numpy's name."""
    try:
        return ElementType.from_dtype(dtype).value
    except (ValueError, KeyError):
        return str(dtype)
