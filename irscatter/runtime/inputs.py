"""Making and reading model inputs: random draws that fit each Parameter, `.npz`/`.npy` files,
and comparing outputs with expected values."""

from __future__ import annotations

import math
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from irscatter.errors import FileAccessError, LoadError, UsageError
from irscatter.ir.element_types import ElementType
from irscatter.ir.files import require_regular
from irscatter.limits import tensor_size_problem
from irscatter.runtime.interpreter import InputSpec


def concrete_shape(spec: InputSpec, override: Sequence[int] | None) -> tuple[int, ...]:
    """The shape to draw for an input: its static shape, or the override for dynamic dims."""
    if override is not None:
        if not spec.shape.accepts(override):
            raise UsageError(f'--shape {spec.name}={",".join(map(str, override))} does not fit the Parameter shape {spec.shape}')
        itemsize = 8 if spec.etype in (ElementType.string, ElementType.dynamic) else spec.etype.nbytes(1)
        if (problem := tensor_size_problem(override, itemsize)) is not None:
            raise UsageError(f"--shape {spec.name}: {problem}")
        return tuple(override)
    if not spec.shape.is_static:
        raise UsageError(
            f'input "{spec.name}" has the dynamic shape {spec.shape}: give one with --shape {spec.name}=d0,d1,...'
        )
    return spec.shape.to_tuple()


def default_shape(spec: InputSpec) -> tuple[int, ...] | None:
    """The shape `--random` draws for a dynamic input nobody gave a shape: each dynamic dim at
    its lower bound, or 1 where the lower bound is 0 (and the upper bound allows 1). None when
    the rank itself is dynamic: there is no sensible default for that."""
    if not spec.shape.rank_is_static:
        return None
    return tuple(d.min if d.is_static or d.min > 0 or d.max == 0 else 1 for d in spec.shape)


def default_shapes(inputs: Sequence[InputSpec], given: Mapping[str, Sequence[int]]) -> dict[str, tuple[int, ...]]:
    """`default_shape` of every dynamic input in `inputs` that `given` has no shape for."""
    out = {}
    for spec in inputs:
        if spec.name not in given and not spec.shape.is_static:
            shape = default_shape(spec)
            if shape is not None:
                out[spec.name] = shape
    return out


def random_array(etype: ElementType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Values that fit `etype`: normals for floats, small integers within the type's range."""
    # drawn in the input's own type where numpy can (no float64 or int64 array twice the size)
    if etype is ElementType.boolean:
        return rng.integers(0, 2, shape, dtype=bool)
    if etype is ElementType.string:
        letters = np.array(list("abcdefghij"))
        return np.array(["".join(rng.choice(letters, 3)) for _ in range(int(np.prod(shape)))],
                        dtype=etype.dtype).reshape(shape)
    if etype is ElementType.nf4:
        return rng.integers(0, 16, shape).astype(np.uint8)
    if etype.is_float:
        return rng.standard_normal(shape, dtype=np.float32).astype(etype.dtype, copy=False)
    if etype is ElementType.dynamic:
        return rng.standard_normal(shape, dtype=np.float32)
    hi = min(10, (1 << (etype.bitwidth - (1 if etype.is_signed else 0))) - 1)
    lo = -hi - 1 if etype.is_signed else 0
    if etype.dtype.itemsize * 8 != etype.bitwidth or etype.dtype.kind not in "iu":  # i4, u4, u2, u1, ...
        return rng.integers(lo, hi + 1, shape, dtype=np.int8).astype(etype.dtype)
    return rng.integers(lo, hi + 1, shape, dtype=etype.dtype)


def random_inputs(
    inputs: Sequence[InputSpec], seed: int = 0, shapes: Mapping[str, Sequence[int]] | None = None
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = shapes or {}
    unknown = set(shapes) - {s.name for s in inputs}
    if unknown:
        raise UsageError(f"--shape names unknown inputs: {', '.join(sorted(unknown))}")
    return {s.name: random_array(s.etype, concrete_shape(s, shapes.get(s.name)), rng) for s in inputs}


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    require_regular(Path(path), "inputs file", "an .npz archive is read by seeking")
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.infolist():
                if member.filename.endswith(".npy"):
                    with archive.open(member) as fp:
                        _check_header(fp, member.file_size, member.filename)
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise FileAccessError("inputs file not found", file=str(path)) from None
    except (OSError, ValueError, EOFError, MemoryError, zipfile.BadZipFile) as e:
        raise LoadError(f"not a readable .npz file: {e or type(e).__name__}", file=str(path)) from None


def load_npy(path: str | Path) -> np.ndarray:
    require_regular(Path(path), "input file", "an .npy file is read twice, its header first")
    try:
        with open(path, "rb") as fp:
            _check_header(fp, Path(path).stat().st_size, Path(path).name)
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise FileAccessError("input file not found", file=str(path)) from None
    except (OSError, ValueError, EOFError, MemoryError) as e:
        raise LoadError(f"not a readable .npy file: {e or type(e).__name__}", file=str(path)) from None


def _check_header(fp, size: int, name: str) -> None:
    """The array an .npy header declares fits in the file's `size` bytes and in the tensor
    limits: the header may claim any shape, and numpy allocates it before reading the data.
    (Version 3 headers, rare, are left to numpy.)"""
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(fp)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(fp)
    else:
        return
    problem = tensor_size_problem(shape, dtype.itemsize)
    if problem is not None:
        raise ValueError(f"{name}: {problem}")
    if math.prod(shape) * dtype.itemsize > size:
        raise ValueError(f"{name} declares {dtype} {list(shape)}, more than its {size} bytes hold")


@dataclass(frozen=True)
class Comparison:
    """One output against its expected value. `ok` is the verdict; `detail` says why, in one
    line; the numbers are None where they do not apply (a missing output, exact types)."""
    name: str
    ok: bool
    detail: str
    max_abs: float | None = None
    max_rel: float | None = None
    max_ulps: float | None = None
    compared: bool = True  # False for an output the expected file does not hold (not judged)


def tolerance_for(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing results of this dtype: exact for integers and booleans, 8 f32
    epsilons (about 1e-6) each for 32- and 64-bit floats, 8e-3 for 16-bit floats."""
    if dtype.kind in "biuUTO":
        return 0.0, 0.0
    eps = float(np.finfo(np.float32).eps) if dtype.itemsize >= 4 else 1e-3
    return 8 * eps, 8 * eps


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


def _scalar(value) -> str:
    return str(value)  # a numpy scalar prints the digits of its own type: 0.043198023, not 0.04319802299141884


def _rounded_up(value: float) -> str:
    """`value` in three significant digits, rounded up, so that the tolerance it names passes."""
    text = f"{value:.3g}"
    if float(text) >= value:
        return text
    exponent = math.floor(math.log10(value)) - 2
    return f"{math.ceil(value / 10.0 ** exponent) * 10.0 ** exponent:.3g}"


def _float_comparison(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float,
                      ulps: float | None) -> Comparison:
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(g - w)
        rel = diff / np.abs(w)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    # A NaN or an infinity that the other side does not have (an infinity of the other sign
    # included) is no small difference: no tolerance passes it, and the maxima say inf.
    one_sided = ~same & ~(np.isfinite(g) & np.isfinite(w))
    diff = np.where(same, 0.0, np.where(one_sided, np.inf, diff))
    rel = np.where(same, 0.0, np.where(one_sided, np.inf, rel))
    distance = ulp_distance(got, want)
    if ulps is not None:
        passing = (distance <= ulps) & ~one_sided
        rule = f"{ulps:g} ulps"
    else:
        with np.errstate(invalid="ignore"):
            passing = same | (~one_sided & (diff <= atol + rtol * np.abs(w)))
        rule = f"rtol {rtol:.3g}, atol {atol:.3g}"
    max_abs = float(diff.max()) if diff.size else 0.0
    max_rel = float(np.nanmax(rel)) if rel.size and not np.isnan(rel).all() else 0.0
    max_ulps = float(distance.max()) if distance.size else 0.0
    stats = f"max abs {max_abs:.3g}, max rel {max_rel:.3g}, max {max_ulps:.0f} ulps"
    ok = bool(passing.all())
    if ok:
        return Comparison(name, True, f"{stats} ({rule})", max_abs, max_rel, max_ulps)
    bad = ~passing
    worst = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(diff, nan=np.inf), -1.0))), diff.shape)
    where = f"[{', '.join(map(str, worst))}]"
    hint = (f"would pass within --atol {_rounded_up(max_abs)} or --ulps {max_ulps:.0f}" if np.isfinite(max_abs)
            else "no tolerance passes a NaN or an infinity on one side only")
    detail = (f"{int(bad.sum())} of {bad.size} elements outside {rule}; {stats}; worst at {where}: "
              f"{_scalar(got[worst])} vs expected {_scalar(want[worst])}; {hint}")
    return Comparison(name, False, detail, max_abs, max_rel, max_ulps)


def compare_outputs(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], *,
                    rtol: float | None = None, atol: float | None = None,
                    ulps: float | None = None) -> list[Comparison]:
    """Each expected output against the actual one, then one not-judged entry per output the
    expected values lack. Element types must match; integers, booleans and strings compare
    exactly; floats within `rtol`/`atol` (defaults: `tolerance_for`) or, given `ulps`, within
    that many units in the last place of the expected type."""
    out = []
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            known = ", ".join(actual) or "none"
            out.append(Comparison(name, False, f"the model has no output of this name (its outputs: {known})"))
            continue
        got, want = np.asarray(got), np.asarray(want)
        if got.dtype != want.dtype:
            out.append(Comparison(name, False, f"element type {got.dtype}, expected {want.dtype}"))
            continue
        if got.shape != want.shape:
            out.append(Comparison(name, False, f"shape {list(got.shape)} != expected {list(want.shape)}"))
            continue
        default_rtol, default_atol = tolerance_for(want.dtype)
        if default_rtol == 0 and default_atol == 0:
            diff = np.asarray(got != want)
            ok = not diff.any()
            detail = "exact" if ok else f"{int(diff.sum())} of {diff.size} elements differ"
            if not ok:
                first = tuple(int(i) for i in np.argwhere(diff)[0])
                detail += f"; first at {list(first)}: {_scalar(got[first])} vs expected {_scalar(want[first])}"
            out.append(Comparison(name, ok, detail))
            continue
        out.append(_float_comparison(name, got, want, default_rtol if rtol is None else rtol,
                                     default_atol if atol is None else atol, ulps))
    for name in actual:
        if name not in expected:
            out.append(Comparison(name, True, "not in the expected values: not compared", compared=False))
    return out


_STEP = re.compile(r"step(\d+)/(.+)")


def has_steps(feeds: Mapping[str, np.ndarray]) -> bool:
    """Whether the feeds are keyed per step (`step0/x`, `step1/x`, ...)."""
    return any(_STEP.fullmatch(name) for name in feeds)


def split_steps(feeds: Mapping[str, np.ndarray], steps: int) -> list[dict[str, np.ndarray]]:
    """The feeds of each step: a feed keyed `step<k>/<name>` is input `name` from step k on (until
    a later step gives another); a feed without a step prefix is the same in every step. There
    are `steps` steps, or as many as the prefixes name when that is more. The prefixes must name
    every step from 0 to their last (a usage error otherwise): one key `step999999/x` is more
    likely a slip than a request for a million steps."""
    per_step: dict[int, dict[str, np.ndarray]] = {}
    plain: dict[str, np.ndarray] = {}
    for name, value in feeds.items():
        m = _STEP.fullmatch(name)
        if m:
            per_step.setdefault(int(m.group(1)), {})[m.group(2)] = value
        else:
            plain[name] = value
    named = max(per_step, default=-1) + 1
    if len(per_step) != named:
        missing = next(k for k in range(named) if k not in per_step)
        raise UsageError(f"the inputs are keyed for steps up to step{named - 1}, but none for step{missing}: step keys "
                         f"(step<k>/<name>) must name every step from step0 to the last")
    count = max(steps, named)
    if count > 1_000_000:
        raise UsageError(f"{count} steps is more than this command will run")
    out = [dict(per_step.get(k, {})) for k in range(count)]
    out[0] = {**plain, **out[0]}
    return out
