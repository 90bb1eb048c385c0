"""Making and reading model inputs: random draws that fit each Parameter, `.npz`/`.npy` files,
and comparing outputs with expected values."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from irscatter.errors import FileAccessError, LoadError, UsageError
from irscatter.ir.element_types import ElementType
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
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except FileNotFoundError:
        raise FileAccessError("inputs file not found", file=str(path)) from None
    except (OSError, ValueError, zipfile.BadZipFile) as e:
        raise LoadError(f"not a readable .npz file: {e}", file=str(path)) from None


def load_npy(path: str | Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise FileAccessError("input file not found", file=str(path)) from None
    except (OSError, ValueError) as e:
        raise LoadError(f"not a readable .npy file: {e}", file=str(path)) from None


@dataclass(frozen=True)
class Comparison:
    name: str
    ok: bool
    detail: str


def tolerance_for(dtype: np.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing results of this dtype: exact for integers and booleans."""
    if dtype.kind in "biuUTO":
        return 0.0, 0.0
    eps = float(np.finfo(np.float32).eps) if dtype.itemsize >= 4 else 1e-3
    return 8 * eps, 8 * eps


def compare_outputs(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], *,
                    rtol: float | None = None, atol: float | None = None) -> list[Comparison]:
    """Each expected output against the actual one: exact for integers and booleans, else within
    `rtol`/`atol` (by default 8 f32 epsilons each, or 1e-3 for 16-bit floats)."""
    out = []
    for name, want in expected.items():
        got = actual.get(name)
        if got is None:
            out.append(Comparison(name, False, "the model has no output of this name"))
            continue
        if got.shape != want.shape:
            out.append(Comparison(name, False, f"shape {list(got.shape)} != expected {list(want.shape)}"))
            continue
        default_rtol, default_atol = tolerance_for(np.dtype(want.dtype))
        r = default_rtol if rtol is None or default_rtol == 0 else rtol
        a = default_atol if atol is None or default_atol == 0 else atol
        if r == 0 and a == 0:
            diff = np.asarray(got != want)
            ok = not diff.any()
            detail = "exact" if ok else f"{int(diff.sum())} of {diff.size} elements differ"
        else:
            g, w = got.astype(np.float64), want.astype(np.float64)
            close = np.isclose(g, w, rtol=r, atol=a, equal_nan=True)
            ok = bool(close.all())
            err = float(np.nanmax(np.abs(g - w))) if g.size else 0.0
            detail = f"max abs diff {err:.3g}" + ("" if ok else f", {int((~close).sum())} elements outside tolerance")
        out.append(Comparison(name, ok, detail))
    return out


_STEP = re.compile(r"step(\d+)/(.+)")


def has_steps(feeds: Mapping[str, np.ndarray]) -> bool:
    """Whether the feeds are keyed per step (`step0/x`, `step1/x`, ...)."""
    return any(_STEP.fullmatch(name) for name in feeds)


def split_steps(feeds: Mapping[str, np.ndarray], steps: int) -> list[dict[str, np.ndarray]]:
    """The feeds of each step: a feed keyed `step<k>/<name>` is input `name` from step k on (until
    a later step gives another); a feed without a step prefix is the same in every step. There
    are `steps` steps, or as many as the prefixes name when that is more."""
    per_step: dict[int, dict[str, np.ndarray]] = {}
    plain: dict[str, np.ndarray] = {}
    for name, value in feeds.items():
        m = _STEP.fullmatch(name)
        if m:
            per_step.setdefault(int(m.group(1)), {})[m.group(2)] = value
        else:
            plain[name] = value
    count = max(steps, max(per_step, default=-1) + 1)
    if count > 1_000_000:
        raise UsageError(f"{count} steps is more than this command will run")
    out = [dict(per_step.get(k, {})) for k in range(count)]
    out[0] = {**plain, **out[0]}
    return out
