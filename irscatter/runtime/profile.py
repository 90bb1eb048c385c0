"""Per-layer timing of a model run, as a table sorted by time (`irscatter run --profile`)."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from irscatter.runtime.interpreter import CompiledModel


@dataclass(frozen=True)
class LayerTime:
    layer_id: int
    name: str
    type: str  # "ScatterNDUpdate-15"
    seconds: float  # median over the runs
    in_place: bool  # the kernel wrote its output into an input buffer it was handed


@dataclass(frozen=True)
class Profile:
    layers: list[LayerTime]  # slowest first
    runs: int
    outputs: dict[str, Any]  # of the last run

    @property
    def total(self) -> float:
        return sum(t.seconds for t in self.layers)

    def table(self, limit: int | None = None) -> str:
        total = self.total or 1.0
        name_width = min(40, max([len(t.name) for t in self.layers] + [5]))
        type_width = max([len(t.type) for t in self.layers] + [4])
        lines = [f"{'layer':<{name_width}}  {'type':<{type_width}}  {'time (ms)':>10}  {'share':>6}  in place"]
        for t in self.layers[:limit]:
            name = t.name if len(t.name) <= name_width else t.name[: name_width - 1] + "~"
            lines.append(f"{name:<{name_width}}  {t.type:<{type_width}}  {1e3 * t.seconds:10.3f}  "
                         f"{100 * t.seconds / total:5.1f}%  {'yes' if t.in_place else ''}".rstrip())
        if limit is not None and len(self.layers) > limit:
            rest = self.layers[limit:]
            lines.append(f"... {len(rest)} more layers, {1e3 * sum(t.seconds for t in rest):.3f} ms")
        lines.append(f"total {1e3 * self.total:.3f} ms in {len(self.layers)} layer{'s' if len(self.layers) != 1 else ''} "
                     f"(median of {self.runs} run{'s' if self.runs != 1 else ''})")
        return "\n".join(lines)


def profile(compiled: CompiledModel, feeds: Mapping[str, Any], runs: int = 1,
            donate: Collection[str] = ()) -> Profile:
    """Run `runs` times, timing every kernel call; each layer's time is its median. Each
    run gets its own copy of the `donate`d feeds (made before the clock starts)."""
    samples: dict[int, list[float]] = {}
    meta: dict[int, tuple[str, str, bool]] = {}
    outputs: dict[str, Any] = {}
    for _ in range(max(1, runs)):
        timings: list = []
        fresh = {k: (np.array(v, copy=True) if k in donate else v) for k, v in feeds.items()}
        outputs = compiled.run(fresh, timings=timings, donate=donate)
        for layer, seconds, reused in timings:
            samples.setdefault(layer.id, []).append(seconds)
            meta[layer.id] = (layer.name, compiled.graph.op(layer.id).label(), reused)
    rows = [LayerTime(lid, meta[lid][0], meta[lid][1], statistics.median(s), meta[lid][2]) for lid, s in samples.items()]
    rows.sort(key=lambda t: t.seconds, reverse=True)
    return Profile(rows, max(1, runs), outputs)
