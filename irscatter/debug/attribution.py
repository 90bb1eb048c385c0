"""Which of conversion or runtime is wrong: the framework's values, the IR's and the target's.

A model goes wrong in one of two places. The converter may have written an IR that computes
something other than the framework did (a conversion fault), or the runtime may compute
something other than the IR says (a runtime fault). irscatter's run of the IR stands between
the two: the framework's saved values are judged against it, by the rule `compare` judges the
target by (`irscatter.metrics`, with compare's tolerances), and the target is judged against
it as `compare` does, layer by layer or as a whole. The verdict is one of the four outcomes.

The saved values are keyed as `run --expected` takes them: by the model's output names, and
here also by any IR tensor name or `"<layer name>:<port id>"` (`"tensor:NAME"` and
`"port:NAME:ID"` settle a name that is both). Judged in topological order, the first one that
departs names the layer where the framework's values stop explaining the IR's; with the
outputs alone, nothing earlier can be named, and the verdict says so.

irscatter's values live in a `held.ValueStore` for the length of the comparison, so that a
model whose values do not fit in memory spills them, and the report says how much it held.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from irscatter.debug.compare import Source, compare_layers, compare_whole, reference_values
from irscatter.debug.extract import port_names, tensor_key
from irscatter.debug.held import ValueStore, needed
from irscatter.debug.tolerances import Tolerances
from irscatter.debug.verdicts import LayerResult, Report, TensorResult, table
from irscatter.errors import UsageError
from irscatter.metrics import TensorDiff, diff
from irscatter.runtime.interpreter import CompiledModel
from irscatter.targets.protocol import Target

VERDICTS = {
    "runtime": "the IR computes what the framework did and the runtime departs",
    "conversion": "the IR itself departs from the framework (a conversion fault)",
    "both": "both: the IR itself departs from the framework (a conversion fault), and the runtime departs from the IR",
    "neither": "all agree: the IR computes what the framework did, and the runtime what the IR does",
}
_LISTED = 8  # departing tensors of the framework's listed without --all


# --- the framework's values against the IR's ------------------------------------------------------


def resolve(compiled: CompiledModel, keys: list[str]) -> tuple[dict[str, Source], dict[str, str]]:
    """Each key of a file of saved values with the tensor it names, and the keys that name
    none, each with the reason: an output name first (as `run --expected` reads them), then a
    tensor name or `"<layer name>:<port id>"`, refused where those two name different tensors."""
    ports: dict[str, Source] = {}
    tensors: dict[str, Source] = {}
    for name, src, is_address in port_names(compiled):
        (ports if is_address else tensors).setdefault(name, src)
    outputs = {spec.name: compiled.graph.returned(spec.layer.id) for spec in compiled.outputs}
    matched, unmatched = {}, {}
    for key in keys:
        if key in outputs:
            matched[key] = outputs[key]
            continue
        kind, _, rest = key.partition(":")
        named = [(tensors if kind == "tensor" else ports).get(rest)] if kind in ("tensor", "port") and rest else [
            tensors.get(key), ports.get(key)]
        found = set(src for src in named if src is not None)
        if len(found) == 1:
            matched[key] = found.pop()
        elif found:
            unmatched[key] = (f'both a tensor name and the address of another port: say "tensor:{key}" or '
                              f'"port:{key}"')
        else:
            unmatched[key] = "names no tensor of the IR (an output name, a tensor name or \"<layer name>:<port id>\")"
    return matched, unmatched


def judge_framework(compiled: CompiledModel, values: Mapping[Source, np.ndarray], expected: Mapping[str, Any],
                    matched: Mapping[str, Source], tolerances: Tolerances) -> list[LayerResult]:
    """The IR's value of each matched tensor (irscatter's) against the framework's, one record
    each, in topological order; a record's tensor is keyed as the file keys it."""
    graph = compiled.graph
    rank = {lid: i for i, lid in enumerate(graph.order)}
    positions = {lid: i for i, lid in enumerate(graph.kernels)}
    records = []
    for key, src in sorted(matched.items(), key=lambda item: (rank[item[1][0]], item[1][1])):
        lid = src[0]
        layer = graph.layers[lid]
        record = LayerResult(positions.get(lid, -1), lid, layer.name, graph.op(lid).label(), layer.line,
                             "pending")
        ours, theirs = np.asarray(values[src]), np.asarray(expected[key])
        judged = _judged(ours, theirs, tolerances.for_tensor(tensor_key(compiled, src), theirs.dtype))
        record.tensors.append(TensorResult(key, judged))
        record.status = "passed" if judged.passed else "failed"
        records.append(record)
    return records


def _judged(ours: np.ndarray, theirs: np.ndarray, tolerance: Any) -> TensorDiff:
    """The IR's value against the framework's, its mismatches said from both sides (as `run
    --expected` refuses them: element type and shape must match)."""
    judged = diff(ours, theirs, tolerance)
    if judged.problem is None:
        return judged
    if ours.shape != theirs.shape:
        problem = f"shape {list(ours.shape)} in the IR, {list(theirs.shape)} in the framework's values"
    else:
        problem = f"element type {ours.dtype} in the IR, {theirs.dtype} in the framework's values"
    return dataclasses.replace(judged, problem=problem)


# --- the verdict ---------------------------------------------------------------------------------


@dataclass
class Attribution:
    """The framework's values (`file`) against the IR's, and the target against the IR: which
    departs (`verdict`, a key of `VERDICTS`, or "undecided" when a gap leaves it open)."""

    file: str
    records: list[LayerResult]  # one per matched key, in topological order
    matched: dict[str, Source]  # key -> the tensor it names
    unmatched: dict[str, str]  # key -> why it names no tensor
    outputs: frozenset[Source]  # the tensors that are the model's outputs
    runtime: Report

    @property
    def first(self) -> LayerResult | None:
        return next((r for r in self.records if r.status == "failed"), None)

    @property
    def outputs_only(self) -> bool:
        return all(src in self.outputs for src in self.matched.values())

    @property
    def verdict(self) -> str:
        conversion, runtime = self.first is not None, not self.runtime.ok
        if conversion or runtime:
            return "both" if conversion and runtime else "conversion" if conversion else "runtime"
        return "undecided" if self.gaps else "neither"

    @property
    def gaps(self) -> list[str]:
        """What leaves a comparison without a departure short of a verdict."""
        gaps = []
        if not self.records:
            gaps.append(f"no key of {self.file} names a tensor of the IR")
        elif self.unmatched:
            gaps.append(f"{len(self.unmatched)} key{'s' if len(self.unmatched) != 1 else ''} of {self.file} "
                        f"name{'s' if len(self.unmatched) == 1 else ''} no tensor of the IR")
        if self.runtime.gap:
            gaps.append(f"on the target, {self.runtime.gap}")
        return gaps

    @property
    def passed(self) -> bool:
        return self.verdict == "neither"

    def verdict_line(self) -> str:
        verdict = self.verdict
        if verdict == "undecided":
            return f"verdict: no departure found, but {'; '.join(self.gaps)}"
        line = f"verdict: {VERDICTS[verdict]}"
        if verdict in ("conversion", "both"):
            line += f"; {self._conversion_where()}"
        if verdict in ("runtime", "both") and (divergence := self.runtime.first_divergence) is not None:
            line += f"; on the target, first divergence: {_label(divergence)}"
        return line

    def _conversion_where(self) -> str:
        first = self.first
        assert first is not None
        if self.outputs_only:
            return (f'output "{first.tensors[0].key}" departs, and {self.file} holds the outputs only, so no earlier '
                    'layer can be named (save the framework\'s intermediate tensors under IR tensor names or '
                    '"<layer name>:<port id>" to find it)')
        return f'the first tensor of {self.file} that departs, in topological order: "{first.tensors[0].key}" of ' \
               f'{_label(first)}'

    def lines(self, every: bool = False) -> list[str]:
        """The framework's tensors that depart (with `every`, all of them), the keys that name
        nothing, and the verdict last."""
        agree = sum(1 for r in self.records if r.status == "passed")
        out = [f"framework values {self.file}: {len(self.records)} tensor{'s' if len(self.records) != 1 else ''} "
               f"judged against irscatter's run of the IR (values: the IR's vs the framework's): {agree} agree, "
               f"{len(self.records) - agree} depart"]
        shown = [r for r in self.records if every or r.status == "failed"]
        for record in shown[:None if every else _LISTED]:
            t = record.tensors[0]
            out.append(f"  {'ok  ' if t.diff.passed else 'FAIL'} {t.key} ({_label(record)}): {t.diff.summary()}")
        if len(shown) > _LISTED and not every:
            out.append(f"  ... {len(shown) - _LISTED} more depart (--all lists every tensor)")
        out += [f'  not judged: "{key}" {why}' for key, why in self.unmatched.items()]
        out.append(self.verdict_line())
        return out

    def to_json(self) -> dict[str, Any]:
        first = self.first
        return {"verdict": self.verdict, "text": self.verdict_line().removeprefix("verdict: "),
                "file": self.file, "runtime_departs": not self.runtime.ok, "conversion_departs": first is not None,
                "outputs_only": self.outputs_only, "gaps": self.gaps,
                "first_conversion_departure": None if first is None else {
                    "key": first.tensors[0].key, "id": first.id, "name": first.name, "op": first.op,
                    "line": first.line},
                "records": [r.to_json() for r in self.records], "unmatched": self.unmatched}


def _label(record: LayerResult) -> str:
    where = f" (line {record.line})" if record.line else ""
    return f'layer {record.id} "{record.name}" ({record.op}){where}'


# --- compare's report, with both -----------------------------------------------------------------


@dataclass
class AttributedReport(Report):
    """compare's report on a target, with what irscatter held of its values (`held`, as
    `ValueStore.to_json` gives it, and `held_line`) and, given the framework's values, the
    `attribution`; it passes when the target does and, given them, all three agree."""

    held: dict[str, int] = field(default_factory=dict)
    held_line: str = ""
    attribution: Attribution | None = None

    @property
    def passed(self) -> bool:
        return super().passed and (self.attribution is None or self.attribution.passed)

    def lines(self, every: bool = False) -> list[str]:
        """What the framework's values add to compare's report: their tensors, and the verdict."""
        return self.attribution.lines(every) if self.attribution is not None else []

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "peak_held_bytes": self.held.get("peak_bytes"), "values_held": self.held,
                "verdict": None if self.attribution is None else self.attribution.to_json()}


def compare_against(compiled: CompiledModel, feeds: Any, target: Target, tolerances: Tolerances, *,
                    whole: bool = False, bisect: bool = False, emulated: str | None = None,
                    expected: Mapping[str, Any] | None = None, expected_file: str = "the framework's values",
                    progress: Callable[[int, int | None], None] | None = None,
                    budget: int | None = None, decompression: str | None = None) -> AttributedReport:
    """`compare_layers` (or, `whole`, `compare_whole`) of `compiled` on `target`, irscatter's
    values emulating `emulated` and held in a `ValueStore` of `budget` bytes (by default
    `limits.compare_bytes`); given the framework's values (`expected`, keyed as `resolve` reads
    them, from `expected_file`), with the verdict on which of conversion and runtime departs.
    The framework's values are judged at the presets of the precision irscatter computed in.
    `decompression="f32"` (a whole model only, without `bisect`) computes compressed weights as
    OpenVINO's CPU plugin does."""
    if decompression is not None and (not whole or bisect):
        raise UsageError("decompression= applies to a whole model without bisect=: a layer run alone on the target "
                         "is fed its weight already decompressed, and a prefix may end inside a decompression "
                         "chain, whose values in f32 are not of the types the graph declares", argument="decompression",
                         value=decompression)
    matched, unmatched = resolve(compiled, list(expected)) if expected is not None else ({}, {})
    keep = needed(compiled, every=not whole or bisect, also=matched.values())
    with ValueStore.for_model(compiled, budget) as values:
        reference_values(compiled, feeds, emulated, into=values, keep=keep, decompression=decompression)
        if whole:
            report = compare_whole(compiled, feeds, target, tolerances, bisect=bisect, values=values)
        else:
            report = compare_layers(compiled, feeds, target, tolerances, values=values, progress=progress)
        at_reference = dataclasses.replace(tolerances, precision=emulated or "f32")
        records = judge_framework(compiled, values, expected, matched, at_reference) if expected is not None else []
    attribution = None
    if expected is not None:
        outputs = frozenset(compiled.graph.returned(spec.layer.id) for spec in compiled.outputs)
        attribution = Attribution(expected_file, records, matched, unmatched, outputs, report)
    kept = {f.name: getattr(report, f.name) for f in dataclasses.fields(report)}
    return AttributedReport(**kept, held=values.to_json(), held_line=values.summary(), attribution=attribution)


def attributed_table(report: Report, every: bool = False) -> str:
    """compare's table, the memory line among its notes, then the framework's tensors and the
    verdict last."""
    if not isinstance(report, AttributedReport):
        return table(report, every)
    return "\n".join([table(dataclasses.replace(report, notes=[*report.notes, report.held_line]), every),
                      *report.lines(every)])


def for_page(report: Report) -> Report:
    """The report as the HTML page shows it: what an `AttributedReport` adds among its notes."""
    if not isinstance(report, AttributedReport):
        return report
    return dataclasses.replace(report, notes=[*report.notes, report.held_line, *report.lines()])
