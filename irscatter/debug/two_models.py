"""Two IRs of one model, tensor by tensor: an original against its compressed (f16 or integer
weights), transformed or re-exported form.

irscatter runs both on the same feeds and keeps every value. A tensor of B is matched to one
of A by its tensor names (a port's `names`: OpenVINO carries a framework's tensor names through
conversion and its transformations), and where either port has none, by its layer's name and
port id. Each matched pair is judged by the one rule (`irscatter.metrics.diff`), A's value
being the reference, in B's topological order, so that the first layer of B out of tolerance
is the first place a conversion or compression step changed the computation. Consts and
Parameters are not judged (both sides are fed alike; a weight's change shows in the layer
that reads it), and the layers of one side that match nothing on the other are listed.

Where the element types of a matched pair differ (an f16 activation in B, f32 in A), B's
value is converted to A's type before judging. Compressed weights make every downstream
value move by about the weights' own precision, so the tolerance presets follow the coarsest
compressed weight of either model (a Const converted to a float): f16 or bf16 weights use
their own presets; 8-bit integer weights bf16's (both keep about 8 significant bits); narrower
ones (int4, nf4, f8) the 8-bit float presets. `--rtol`, `--atol` and `--tol` replace them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.api import read_model
from irscatter.debug.compare import Source, reference_values
from irscatter.debug.extract import tensor_key
from irscatter.debug.tolerances import Tolerances, judge_across_types
from irscatter.debug.verdicts import LayerResult, Report, TensorResult, listed, side_names
from irscatter.errors import UsageError
from irscatter.ir.element_types import ElementType
from irscatter.metrics import PRESETS
from irscatter.runtime.interpreter import CompiledModel

ONLY = "only in {}"


@dataclass(frozen=True)
class Match:
    """A tensor of B and the tensor of A it stands for, and how they were paired."""

    b: Source
    a: Source
    by: str  # 'tensor name "x"' or "layer name and port"


# --- which tensors correspond ----------------------------------------------------------------------


def _judged(compiled: CompiledModel) -> list[Source]:
    """The tensors of a model that are judged: every output of a layer that runs a kernel."""
    return [src for lid in compiled.graph.kernels for src in compiled.graph.outputs_of(lid)]


def match_tensors(a: CompiledModel, b: CompiledModel) -> list[Match]:
    """Each judged tensor of B paired with A's tensor of one of its names, or, where one of the
    two ports has no names, with A's tensor of the same layer name and port id."""
    by_name: dict[str, Source] = {}
    by_key: dict[str, Source] = {}
    for src in a.graph.tensors():
        for name in a.graph.layers[src[0]].outputs[src[1]].names:
            by_name.setdefault(name, src)
        by_key.setdefault(tensor_key(a, src), src)
    matches = []
    for src in _judged(b):
        port = b.graph.layers[src[0]].outputs[src[1]]
        named = next((n for n in port.names if n in by_name), None)
        if named is not None:
            matches.append(Match(src, by_name[named], f'tensor name "{named}"'))
            continue
        theirs = by_key.get(tensor_key(b, src))
        if theirs is not None and not (port.names and a.graph.layers[theirs[0]].outputs[theirs[1]].names):
            matches.append(Match(src, theirs, "layer name and port"))
    return matches


# --- the precision the presets follow --------------------------------------------------------------


def weights_precision(*models: CompiledModel) -> tuple[str, str]:
    """The precision whose presets suit values computed from the models' compressed weights
    (Consts converted to a float), and why: the coarsest over the models, f32 when none is."""
    order = list(PRESETS)
    chosen, why = "f32", "no compressed weights"
    for name, compiled in zip("AB", models):
        found: dict[str, int] = {}
        graph = compiled.graph
        for lid in graph.of_type("Convert"):
            src = graph.producer(lid)
            if src is None or graph.type_of(src[0]) != "Const" or not graph.infos[(lid, 0)].etype.is_float:
                continue
            etype = graph.infos[src].etype
            precision = _weight_precision(etype)
            if precision is not None:
                found[etype.value] = found.get(etype.value, 0) + 1
                if order.index(precision) > order.index(chosen):
                    chosen = precision
        if found:
            kinds = ", ".join(f"{n} {t}" for t, n in found.items())
            why = (why + "; " if why != "no compressed weights" else "") + f"{name} has compressed weights ({kinds})"
    return chosen, why


def _weight_precision(etype: ElementType) -> str | None:
    if etype.is_float and etype.bitwidth == 16:
        return etype.value  # f16, bf16
    if etype.bitwidth <= 8 and (etype.is_float or etype.is_integral):
        return "bf16" if etype.bitwidth == 8 and not etype.is_float else "f8"
    return None


# --- the comparison --------------------------------------------------------------------------------


def feeds_for(b: CompiledModel, a: CompiledModel, arrays: Sequence[np.ndarray]) -> tuple[dict[str, np.ndarray],
                                                                                       list[str]]:
    """A's fed arrays (in A's input order) as B's feeds: each input of B takes A's input of a
    shared name, else, when both have as many inputs, the one at its position; converted to
    B's element type where it differs (said in the notes returned)."""
    index: dict[str, int] = {}
    for i, spec in enumerate(a.inputs):
        for name in (spec.name, *spec.names):
            index.setdefault(name, i)
    feeds, notes = {}, []
    for j, spec in enumerate(b.inputs):
        from_a = next((index[n] for n in (spec.name, *spec.names) if n in index), None)
        if from_a is None and len(a.inputs) == len(b.inputs):
            from_a = j
        if from_a is None:
            raise UsageError(f'B\'s input "{spec.name}" has no input of its name in A, so the two cannot be fed alike')
        array = arrays[from_a]
        if spec.etype not in (ElementType.dynamic, ElementType.string) and array.dtype != spec.etype.dtype:
            notes.append(f'input "{spec.name}" fed to B as {spec.etype} (A takes {ElementType.from_dtype(array.dtype)})')
            array = array.astype(spec.etype.dtype)
        feeds[spec.name] = array
    return feeds, notes


def compare_models(a: CompiledModel, b: CompiledModel, feeds: Any, *, rtol: float | None = None,
                   atol: float | None = None, overrides: tuple = (), precision: str | None = None,
                   names: tuple[str, str] | None = None) -> Report:
    """B judged against A, both run by irscatter on `feeds` (A's inputs), tensor by tensor in
    B's topological order. `precision` names the tolerance presets (default: from the weights,
    see `weights_precision`); `rtol`, `atol` and `overrides` as `tolerances.Tolerances` takes them."""
    start = time.perf_counter()
    names = names or (a.model.source, b.model.source)
    report = Report(f"A: {names[0]}", f"B: {names[1]}", "models")
    report.reference_name, report.target_name = side_names(*names)
    why = "as asked"
    if precision is None:
        precision, why = weights_precision(a, b)
    tolerances = Tolerances(precision, rtol, atol, tuple(overrides))
    arrays = a.feed_arrays(feeds)
    b_feeds, notes = feeds_for(b, a, arrays)
    values_a = reference_values(a, dict(zip((s.name for s in a.inputs), arrays)))
    values_b = reference_values(b, b_feeds)
    report.notes.append(f"tolerance presets of {precision} ({PRESETS[precision]}): {why}")
    report.notes += notes
    matches = {m.b: m for m in match_tensors(a, b)}
    converted: dict[tuple[str, str], list[str]] = {}
    records: dict[int, LayerResult] = {}
    for position, lid in enumerate(b.graph.kernels):
        layer = b.graph.layers[lid]
        record = LayerResult(position, lid, layer.name, b.graph.op(lid).label(), layer.line, "not compared",
                             ONLY.format("B"))
        records[lid] = record
        report.layers.append(record)
    for src in _judged(b):
        match = matches.get(src)
        if match is None:
            continue
        record, key = records[src[0]], tensor_key(b, src)
        tensor_diff, cast = judge_across_types(values_b[src], values_a[match.a], tolerances, key, report.sides)
        if cast:
            converted.setdefault(cast, []).append(key)
        record.tensors.append(TensorResult(key, tensor_diff, tuple(b.graph.layers[src[0]].outputs[src[1]].names)))
        a_key = tensor_key(a, match.a)
        if a_key != key:
            record.reason = f'as A\'s "{a_key}" ({match.by})'
        elif record.reason == ONLY.format("B"):
            record.reason = None
    for record in report.layers:
        if record.tensors:
            record.status = "passed" if all(t.diff.passed for t in record.tensors) else "failed"
    report.layers += _only_in_a(a, {m.a for m in matches.values()})
    for (theirs, ours), keys in converted.items():
        report.notes.append(f"compared in A's element type: {len(keys)} tensor{'s' if len(keys) != 1 else ''} "
                            f"{theirs} in B, {ours} in A ({listed(keys)})")
    report.seconds = time.perf_counter() - start
    return report


def _only_in_a(a: CompiledModel, matched: set[Source]) -> list[LayerResult]:
    """A record for each layer of A none of whose outputs B has."""
    out = []
    for lid in a.graph.kernels:
        if any(src in matched for src in a.graph.outputs_of(lid)):
            continue
        layer = a.graph.layers[lid]
        out.append(LayerResult(-1, lid, layer.name, a.graph.op(lid).label(), layer.line, "not compared",
                               ONLY.format("A")))
    return out


def compare_files(a: str | Path, b: str | Path, feeds: Any, **options: Any) -> Report:
    """`compare_models` on two IR files, read and compiled by irscatter."""
    return compare_models(read_model(a).compile(), read_model(b).compile(), feeds, names=(str(a), str(b)), **options)


def unmatched(report: Report) -> dict[str, list[str]]:
    """The layers of each side that match nothing on the other: {"A": [...], "B": [...]}."""
    return {side: [r.name for r in report.records if r.status == "not compared" and r.reason == ONLY.format(side)]
            for side in "AB"}


def keys_of(compiled: CompiledModel) -> Iterable[str]:
    """The keys `--tol` patterns are searched in: B's "<layer name>:<port id>"."""
    return (tensor_key(compiled, src) for src in _judged(compiled))


__all__ = ["Match", "compare_files", "compare_models", "feeds_for", "keys_of", "match_tensors",
           "unmatched", "weights_precision"]
