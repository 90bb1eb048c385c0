"""Making and reading model inputs: random draws that fit each Parameter, `.npz`/`.npy` files
(and arrays saved as one), the feeds of a run gathered from both, and comparing outputs with
expected values."""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.errors import Argument, FileAccessError, LoadError, UsageError
from irscatter.ir.element_types import ElementType
from irscatter.ir.files import require_regular
from irscatter.limits import current as current_limits
from irscatter.limits import tensor_size_problem
from irscatter.metrics import Tolerance, diff, preset_for, ulp_distance
from irscatter.runtime.graph_view import GraphView
from irscatter.runtime.interpreter import CompiledModel, InputSpec

# The arguments of `gather_feeds` (and `random_inputs`) that messages speak of.
_SHAPES, _RANGES = Argument("shapes"), Argument("ranges")


def concrete_shape(spec: InputSpec, override: Sequence[int] | None) -> tuple[int, ...]:
    """The shape to draw for an input: its static shape, or the override for dynamic dims
    (what `shapes` gives it, as the messages say)."""
    if override is not None:
        if not spec.shape.accepts(override):
            raise UsageError(_SHAPES, f' {spec.name}={",".join(map(str, override))} does not fit the Parameter '
                             f'shape {spec.shape}', value=override)
        itemsize = 8 if spec.etype in (ElementType.string, ElementType.dynamic) else spec.etype.nbytes(1)
        if (problem := tensor_size_problem(override, itemsize)) is not None:
            raise UsageError(_SHAPES, f" {spec.name}: {problem}", value=override)
        return tuple(override)
    if not spec.shape.is_static:
        raise UsageError(f'input "{spec.name}" has the dynamic shape {spec.shape}: give one with ', _SHAPES,
                         f" {spec.name}=d0,d1,...")
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


Bounds = tuple[float, float]  # (lo, hi), both included


def random_inputs(
    inputs: Sequence[InputSpec], seed: int = 0, shapes: Mapping[str, Sequence[int]] | None = None,
    ranges: Mapping[str, Bounds] | None = None,
) -> dict[str, np.ndarray]:
    """A draw of each input in `inputs`: within its range in `ranges` where it has one (see
    `accepted_ranges` and `parse_ranges`), else as `random_array` draws its type."""
    rng = np.random.default_rng(seed)
    shapes, ranges = shapes or {}, ranges or {}
    unknown = set(shapes) - {s.name for s in inputs}
    if unknown:
        raise UsageError(_SHAPES, f" names unknown inputs: {', '.join(sorted(unknown))}", value=dict(shapes))
    out = {}
    for spec in inputs:
        shape = concrete_shape(spec, shapes.get(spec.name))
        bounds = ranges.get(spec.name)
        if bounds is None or not _takes_range(spec.etype):
            out[spec.name] = random_array(spec.etype, shape, rng)
        else:
            out[spec.name] = array_within(spec, shape, bounds, rng)
    return out

# Layers whose output holds their input's values (in another type or shape): a range the layers
# reading the output declare holds for the input too.
_PASSING_VALUES = frozenset({"Convert", "Reshape", "Squeeze", "Unsqueeze", "Identity"})


def accepted_ranges(compiled: CompiledModel) -> dict[str, Bounds]:
    """For each input of `compiled` that a layer declares a range for (`Op.input_range`: the
    indices, lengths and counts it accepts), the values every such reader accepts: the
    intersection of their ranges, followed through layers that pass values on unchanged. An
    empty intersection is kept (lo > hi), for the draw to refuse."""
    out: dict[str, Bounds] = {}
    for spec in compiled.inputs:
        bounds = _reader_ranges(compiled.graph, (spec.layer.id, 0))
        if bounds:
            out[spec.name] = (max(lo for lo, _ in bounds), min(hi for _, hi in bounds))
    return out


def _reader_ranges(graph: GraphView, source: tuple[int, int]) -> list[Bounds]:
    """The ranges the layers reading `source` declare, and those reading what passes it on."""
    found: list[Bounds] = []
    pending, seen = [source], {source}
    while pending:
        for lid, position in graph.readers(pending.pop()):
            op = graph.op(lid)
            if graph.type_of(lid) in _PASSING_VALUES and position == 0:
                if (lid, 0) not in seen:
                    seen.add((lid, 0))
                    pending.append((lid, 0))
                continue
            infos = tuple(None if s is None else graph.infos.get(s) for s in graph.sources[lid])
            bounds = op.input_range(position, infos)
            if bounds is not None:
                found.append(bounds)
    return found


def parse_ranges(texts: Sequence[str], inputs: Sequence[InputSpec]) -> dict[str, Bounds]:
    """`NAME=LO,HI` values by input name, checked: a known input of a type that takes a range,
    two numbers (integers for an integer input, within its type), LO <= HI. Its messages call
    `texts` by the keyword `gather_feeds` takes them as, `ranges`."""
    by_name = {s.name: s for s in inputs}
    out: dict[str, Bounds] = {}
    for text in texts:
        name, sep, rest = text.partition("=")
        bounds = rest.split(",")
        if not sep or not name or len(bounds) != 2:
            raise UsageError(_RANGES, f' expects NAME=LO,HI, got "{text}"', value=text)
        if name not in by_name:
            raise UsageError(_RANGES, f" names no input of the model: {name} (its inputs: {', '.join(by_name)})",
                             value=text)
        if name in out:
            raise UsageError(_RANGES, f' gives input "{name}" twice', value=text)
        spec = by_name[name]
        if not _takes_range(spec.etype):
            raise UsageError(_RANGES, f" {text}: input {name} is {spec.etype}, whose values have no range to set",
                             value=text)
        lo, hi = (_range_bound(b, spec, text) for b in bounds)
        if lo > hi:
            raise UsageError(_RANGES, f" {text}: LO is above HI", value=text)
        out[name] = (lo, hi)
    return out


def _range_bound(text: str, spec: InputSpec, whole: str) -> float:
    try:
        value = float(text) if spec.etype.is_float else int(text)
    except ValueError:
        kind = "numbers" if spec.etype.is_float else f"integers (input {spec.name} is {spec.etype})"
        raise UsageError(_RANGES, f" {whole}: LO and HI must be {kind}", value=whole) from None
    if not spec.etype.is_float:
        lowest, highest = _integer_limits(spec.etype)
        if not lowest <= value <= highest:
            raise UsageError(_RANGES, f" {whole}: {value} does not fit {spec.etype} ([{lowest}, {highest}])",
                             value=whole)
    elif not math.isfinite(value):
        raise UsageError(_RANGES, f" {whole}: LO and HI must be finite", value=whole)
    return value


def _takes_range(etype: ElementType) -> bool:
    """Booleans are drawn as booleans, strings as strings, nf4 codes as codes: no range applies."""
    return etype not in (ElementType.boolean, ElementType.string, ElementType.nf4, ElementType.dynamic)


def _integer_limits(etype: ElementType) -> tuple[int, int]:
    if etype.is_signed:
        return -(1 << (etype.bitwidth - 1)), (1 << (etype.bitwidth - 1)) - 1
    return 0, (1 << etype.bitwidth) - 1


def array_within(spec: InputSpec, shape: tuple[int, ...], bounds: Bounds, rng: np.random.Generator) -> np.ndarray:
    """Values of `spec`'s type within `bounds`: integers for an integer input (and for a float
    one whose readers count with it, as a float sequence length); floats uniform in a float
    range given with --range. A range clipped to the type's own is drawn within what is left."""
    lo, hi = bounds
    if lo > hi:
        raise UsageError(f'the layers reading input "{spec.name}" accept no value in common: give it with ',
                         Argument("arrays"), ", or a range with ", _RANGES, f" {spec.name}=LO,HI")
    if spec.etype.is_float and not (float(lo).is_integer() and float(hi).is_integer()):
        return rng.uniform(lo, hi, shape).astype(spec.etype.dtype)
    if not spec.etype.is_float:
        lowest, highest = _integer_limits(spec.etype)
        lo, hi = max(lo, lowest), min(hi, highest, np.iinfo(np.int64).max - 1)  # (drawn as int64)
    return rng.integers(int(lo), int(hi) + 1, shape, dtype=np.int64).astype(spec.etype.dtype)


class FeedRequestError(UsageError):
    """A request for feeds that `gather_feeds` refuses, said in parts so that a caller can put it
    in the terms it was asked in (the CLI: its flags): `argument` is the keyword of the part of
    the request at fault ("file", "arrays", "shapes", "ranges", or None for the request as a
    whole), `reason` what is wrong ("not-one-input", "twice", "unknown-input", "fed",
    "nothing-fed"), `subject` the path or input names concerned and `detail` the rest of what
    the message says."""

    def __init__(self, message: str, *, argument: str | None, reason: str, subject: str = "",
                 detail: str = "") -> None:
        super().__init__(message, argument=argument, value=subject or None)
        self.reason, self.subject, self.detail = reason, subject, detail


def gather_feeds(compiled: CompiledModel, *, file: str | None = None, arrays: Sequence[tuple[str | None, str]] = (),
                 random: bool = False, seed: int = 0, shapes: Mapping[str, Sequence[int]] | None = None,
                 ranges: Sequence[str] = (), required: bool = True,
                 on_defaults: Callable[[dict[str, tuple[int, ...]]], None] | None = None) -> dict[str, Any]:
    """The feeds of a run of `compiled`: those of `file` (an .npz keyed by input name, or one .npy
    for a one-input model), then those of `arrays` ((input name, .npy path) pairs; a name of
    None is the only input of a one-input model), then, with `random`, a draw of every input
    left (`random_inputs` with `seed`, `shapes` for dynamic inputs, `ranges` as `parse_ranges`
    reads them, else what the layers reading each input accept). A dynamic input `shapes` does
    not size is drawn at its smallest shape (`default_shapes`), which `on_defaults` is told of
    before the draw. With `required`, feeding nothing to a model with inputs is refused."""
    feeds: dict[str, Any] = {}
    if file and is_npy(file):
        feeds[_only_input(compiled, "file", file)] = load_npy(file)
    elif file:
        feeds.update(load_npz(file))
    given: set[str] = set()  # (an array may replace an input of the file, but not one of its own)
    for name, path in arrays:
        name = _only_input(compiled, "arrays", path) if name is None else name
        if name in given:
            raise FeedRequestError(f'input "{name}" is given twice', argument="arrays", reason="twice", subject=name)
        given.add(name)
        feeds[name] = load_npy(path)
    if random:
        feeds.update(_drawn_feeds(compiled, feeds, seed, dict(shapes or {}), ranges, on_defaults))
    if required and not feeds and compiled.inputs:
        listed = ", ".join(f"{s.name}: {s.etype} {s.shape}" for s in compiled.inputs[:4])
        more = ", ..." if len(compiled.inputs) > 4 else ""
        detail = (f"the model has {len(compiled.inputs)} input{'s' if len(compiled.inputs) != 1 else ''} "
                  f"({listed}{more}) and nothing was fed")
        raise FeedRequestError(detail, argument=None, reason="nothing-fed", detail=detail)
    return feeds


def _drawn_feeds(compiled: CompiledModel, feeds: Mapping[str, Any], seed: int, shapes: dict[str, Sequence[int]],
                 ranges: Sequence[str], on_defaults: Callable[[dict[str, tuple[int, ...]]], None] | None,
                 ) -> dict[str, np.ndarray]:
    """A draw of every input of `compiled` that `feeds` leaves out (see `gather_feeds`)."""
    names = ", ".join(s.name for s in compiled.inputs)
    unknown = sorted(set(shapes) - {s.name for s in compiled.inputs})
    if unknown:
        raise FeedRequestError(f"a shape is given for no input of the model: {', '.join(unknown)} (its inputs: "
                               f"{names})", argument="shapes", reason="unknown-input", subject=", ".join(unknown),
                               detail=f"its inputs: {names}")
    missing = [s for s in compiled.inputs if s.name not in feeds and not any(n in feeds for n in s.names)]
    _refuse_fed(sorted(set(shapes) - {s.name for s in missing}), "shapes")
    defaulted = default_shapes(missing, shapes)
    if defaulted and on_defaults is not None:
        on_defaults(defaulted)
    given = parse_ranges(ranges, compiled.inputs)
    _refuse_fed(sorted(set(given) - {s.name for s in missing}), "ranges")
    return random_inputs(missing, seed, {**shapes, **defaulted}, {**accepted_ranges(compiled), **given})


def _refuse_fed(fed: list[str], argument: str) -> None:
    """A shape or range (of `shapes` or `ranges`) is for an input drawn at random, not one fed."""
    if fed:
        raise FeedRequestError(f'input "{fed[0]}" is fed: a {argument.removesuffix("s")} applies only to an input '
                               "drawn at random", argument=argument, reason="fed", subject=fed[0])


def _only_input(compiled: CompiledModel, argument: str, path: str) -> str:
    """The input one array with no name feeds: that of a one-input model."""
    if len(compiled.inputs) != 1:
        detail = (f"one array feeds a model of one input; this one has {len(compiled.inputs)} "
                  f"({', '.join(s.name for s in compiled.inputs)})")
        raise FeedRequestError(f"{path}: {detail}", argument=argument, reason="not-one-input", subject=path, detail=detail)
    return compiled.inputs[0].name


def is_npy(path: str) -> bool:
    """A .npy file (by its magic string, whatever its name), rather than an .npz archive. Only a
    regular file is opened to look: a pipe would block (the .npz reader refuses what is not one)."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(6) == b"\x93NUMPY"
    except OSError:
        return False  # (the .npz reader says what is wrong with it)


def load_npz(path: str | Path) -> dict[str, np.ndarray]:
    require_regular(Path(path), "inputs file", "an .npz archive is read by seeking")
    try:
        with zipfile.ZipFile(path) as archive:
            total = 0
            for member in archive.infolist():
                # every member, whatever its name: numpy reads one without the .npy suffix too
                with archive.open(member) as fp:
                    total += _check_header(fp, member.file_size, member.filename)
                _check_total(total, member.filename)
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


def save_npz(path: str | Path, arrays: Mapping[str, Any]) -> None:
    """`arrays` as an .npz archive at `path`, a member per name, as `np.load` reads them back.
    Written member by member rather than through `np.savez(path, **arrays)`, which would take
    an array named "file" or "allow_pickle" for its own argument of that name."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, value in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=True)


# Element types a tensor of a model never has, and that nothing downstream (feeds, metrics,
# JSON) can take: records and raw bytes (structured, void), dates and durations, Python objects.
_FOREIGN_KINDS = {"V": "structured or void", "M": "datetime64", "m": "timedelta64", "O": "object"}


def _check_header(fp, size: int, name: str) -> int:
    """The array an .npy header declares fits in the file's `size` bytes and in the tensor
    limits, and has an element type a tensor can have; returns its size in bytes. The header
    may claim any shape, and numpy allocates it before reading the data."""
    try:
        version = np.lib.format.read_magic(fp)
    except ValueError:
        raise ValueError(f"{name} is not an .npy array (an .npz holds nothing else)") from None
    if version not in ((1, 0), (2, 0), (3, 0)):
        raise ValueError(f"{name} is an .npy file of version {version[0]}.{version[1]}, which numpy does not read")
    # (version 3 differs from 2 only in that its header may hold UTF-8: sizes read the same)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read(fp)
    if dtype.kind in _FOREIGN_KINDS or dtype.fields is not None:
        raise ValueError(f"{name} holds {_FOREIGN_KINDS.get(dtype.kind, 'structured')} values ({dtype}), "
                         "which no tensor of a model has")
    problem = tensor_size_problem(shape, dtype.itemsize)
    if problem is not None:
        raise ValueError(f"{name}: {problem}")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > size:
        raise ValueError(f"{name} declares {dtype} {list(shape)}, more than its {size} bytes hold")
    return nbytes


def _check_total(total: int, name: str) -> None:
    """The arrays of one .npz are all read at once: together they stay within npz_bytes (a
    small archive of compressed members may expand a thousandfold)."""
    most = current_limits().npz_bytes
    if total > most:
        raise ValueError(f"its arrays up to {name} take {total} bytes, over the limit of {most} for "
                         "one .npz (irscatter.limits: npz_bytes)")


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


def _scalar(value) -> str:
    return str(value)  # a numpy scalar prints the digits of its own type: 0.043198023, not 0.04319802299141884


def _rounded_up(value: float) -> str:
    """`value` in three significant digits, rounded up, so that the tolerance it names passes."""
    text = f"{value:.3g}"
    if float(text) >= value:
        return text
    exponent = math.floor(math.log10(value)) - 2
    return f"{math.ceil(value / 10.0 ** exponent) * 10.0 ** exponent:.3g}"


def _float_comparison(name: str, got: np.ndarray, want: np.ndarray, tolerance: Tolerance,
                      ulps: float | None) -> Comparison:
    """One float output under the rule `compare` judges by (`irscatter.metrics`), or, given
    `ulps`, within that many units in the last place of the expected type."""
    judged = diff(got, want, tolerance)
    rule = f"{ulps:g} ulps" if ulps is not None else str(tolerance)
    if ulps is not None:
        distance = ulp_distance(got, want)
        finite_pairs = np.isfinite(got.astype(np.float64)) == np.isfinite(want.astype(np.float64))
        nan_pairs = np.isnan(got.astype(np.float64)) == np.isnan(want.astype(np.float64))
        within = (distance <= ulps) & finite_pairs & nan_pairs
        passed, outside = bool(within.all()), int((~within).sum())
    else:
        passed, outside = judged.passed, judged.mismatches
    max_ulps = judged.max_ulps if judged.max_ulps is not None else 0.0
    stats = f"max abs {judged.max_abs:.3g}, max rel {judged.max_rel:.3g}, max {max_ulps:.0f} ulps"
    if passed:
        return Comparison(name, True, f"{stats} ({rule})", judged.max_abs, judged.max_rel, max_ulps)
    worst = judged.worst
    where = f"; worst at {list(worst)}: {_scalar(judged.worst_target)} vs expected {_scalar(judged.worst_reference)}" \
        if worst is not None else ""
    if judged.max_abs is not None and math.isfinite(judged.max_abs):
        need = judged.required.atol if judged.required is not None else 0.0
        hint = f"would pass within --atol {_rounded_up(max(need, 1e-45))} or --ulps {max_ulps:.0f}"
    else:
        hint = "no tolerance passes a NaN or an infinity on one side only"
    detail = f"{outside} of {judged.count} elements outside {rule}; {stats}{where}; {hint}"
    return Comparison(name, False, detail, judged.max_abs, judged.max_rel, max_ulps)


def compare_outputs(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], *,
                    rtol: float | None = None, atol: float | None = None,
                    ulps: float | None = None, precision: str = "f32") -> list[Comparison]:
    """Each expected output against the actual one, then one not-judged entry per output the
    expected values lack. Element types must match; integers, booleans and strings compare
    exactly; floats by the rule `compare` uses (`irscatter.metrics`), with the presets of
    `precision` and the output's own type unless `rtol`/`atol` replace them, or within `ulps`
    units in the last place of the expected type."""
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
        preset = preset_for(want.dtype, precision)
        if preset is None:
            judged = diff(got, want, None)
            detail = "exact" if judged.passed else judged.summary().replace(" vs ", " vs expected ", 1)
            out.append(Comparison(name, judged.passed, detail))
            continue
        tolerance = Tolerance(preset.rtol if rtol is None else rtol, preset.atol if atol is None else atol)
        out.append(_float_comparison(name, got, want, tolerance, ulps))
    for name in actual:
        if name not in expected:
            out.append(Comparison(name, True, "not in the expected values: not compared", compared=False))
    return out
