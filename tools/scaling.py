"""How cost grows with size: W1, W2 and W8 of the benchmark at four sizes spanning 16x.

    python tools/bench.py --scaling [--runs 5] [--json scaling.json] [--plot]

Each workload is written at sizes s, 2.5s, 6.3s and 16s (the last is the benchmark's own size),
timed as the benchmark times it (irscatter, and OpenVINO when installed, for comparison), and
fitted by least squares on a log-log scale: time ~ size^k. A k above 1.1 means some step
grows faster than the data (a hidden quadratic path) and is flagged. `--plot` draws the curves
into a PNG beside the JSON (it needs matplotlib).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import bench
import numpy as np

STEPS = (1.0, 2.52, 6.35, 16.0)  # geometric: 16 ** (i / 3)
LIMIT = 1.1


@dataclass(frozen=True)
class Sized:
    key: str
    title: str
    unit: str
    full: int  # the benchmark's own size in `unit`
    write: Callable[[Path, int], None]
    kind: str = "run"


def _scatter_rows(folder: Path, rows: int) -> None:
    rng = np.random.default_rng(1)
    shape = (rows, 1024)
    data = rng.standard_normal(shape, dtype=np.float32)
    indices = rng.integers(0, rows, shape, dtype=np.int64)
    updates = rng.standard_normal(shape, dtype=np.float32)
    bench._single_op(folder, "scatter_elements", ("ScatterElementsUpdate", "opset12",
                                                  {"reduction": "sum", "use_init_val": "true"}),
                     [("data", data, True), ("indices", indices, True), ("updates", updates, True),
                      ("axis", np.array(0, np.int64), False)], None)


def _cache_rows(folder: Path, rows: int) -> None:
    rng = np.random.default_rng(2)
    tokens = rows // 8
    cache = rng.standard_normal((rows, 128), dtype=np.float32)
    indices = rng.permutation(rows)[:tokens].astype(np.int64).reshape(tokens, 1)
    updates = rng.standard_normal((tokens, 128), dtype=np.float32)
    bench._single_op(folder, "kv_cache_write", ("ScatterNDUpdate", "opset15", {"reduction": "none"}),
                     [("cache", cache, True), ("indices", indices, True), ("updates", updates, True)], None)


def _layers(folder: Path, pairs: int) -> None:
    rng = np.random.default_rng(6)
    w = bench.IRWriter("big_model")
    shape = (2048,)
    bench._chain_of_adds(w, shape, pairs,
                         lambda i: w.const(f"w{i}", rng.standard_normal(shape, dtype=np.float32) * np.float32(1e-3)))
    bench._save(w, folder)
    np.savez(folder / "feeds.npz", x=np.zeros(shape, np.float32))
    (folder / "layers.txt").write_text(str(w.layer_count))


SIZED = [
    Sized("W1", "ScatterElementsUpdate-12 sum, N x 1024", "rows", 4096, _scatter_rows),
    Sized("W2", "ScatterNDUpdate-15 KV-cache write, N x 128, N/8 rows written", "rows", 65536, _cache_rows),
    Sized("W8", "loading 2N+2 layers (N Const/Add pairs, 8 KB a Const)", "pairs", 9999, _layers, kind="load"),
]


@dataclass
class Curve:
    key: str
    title: str
    unit: str
    sizes: list[int] = field(default_factory=list)
    times_ms: dict[str, list[float]] = field(default_factory=dict)

    def exponent(self, engine: str) -> float:
        """k of time ~ size^k, fitted by least squares on log-log."""
        x, y = np.log(self.sizes), np.log(self.times_ms[engine])
        return float(np.polyfit(x, y, 1)[0])


def measure(root: Path, runs: int, small: bool) -> list[Curve]:
    engines = [e for e in bench.installed_engines() if e in (bench.IRSCATTER, bench.OPENVINO)]
    curves = []
    for sized in SIZED:
        curve = Curve(sized.key, sized.title, sized.unit)
        full = max(16, sized.full // 64) if small else sized.full
        for step in STEPS:
            size = max(1, round(full * step / STEPS[-1]))
            folder = root / f"{sized.key}-{size}"
            sized.write(folder, size)
            workload = bench.Workload(sized.key, sized.title, lambda f, s: None, kind=sized.kind)
            prepared = {e: p for e in engines if (p := bench.prepare(e, workload, folder)) is not None}
            times = bench.time_interleaved(prepared, runs)
            curve.sizes.append(size)
            for engine, ms in times.items():
                curve.times_ms.setdefault(engine, []).append(ms)
        curves.append(curve)
        print(describe(curve), flush=True)
    return curves


def describe(curve: Curve) -> str:
    lines = [f"{curve.key}  {curve.title}"]
    lines.append("    " + f"{curve.unit:<22}" + "".join(f"{s:>11}" for s in curve.sizes) + "      k")
    for engine, times in curve.times_ms.items():
        k = curve.exponent(engine)
        flag = "  (over 1.1: grows faster than the data)" if engine == bench.IRSCATTER and k > LIMIT else ""
        lines.append("    " + f"{engine:<22}" + "".join(f"{t:9.2f}ms" for t in times) + f"  {k:5.2f}{flag}")
    return "\n".join(lines)


def plot(curves: list[Curve], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 4), squeeze=False)
    for ax, curve in zip(axes[0], curves):
        for engine, times in curve.times_ms.items():
            ax.loglog(curve.sizes, times, marker="o", label=f"{engine} (k = {curve.exponent(engine):.2f})")
        lo, hi = curve.sizes[0], curve.sizes[-1]
        base = curve.times_ms[bench.IRSCATTER][0]
        ax.loglog([lo, hi], [base, base * hi / lo], linestyle=":", color="grey", label="linear from the smallest")
        ax.xaxis.set_minor_formatter(NullFormatter())  # the minor labels of a short log axis overlap
        ax.set_title(f"{curve.key}: {curve.title}", fontsize=9)
        ax.set_xlabel(curve.unit)
        ax.set_ylabel("ms")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def as_json(curves: list[Curve]) -> list[dict]:
    return [{"key": c.key, "title": c.title, "unit": c.unit, "sizes": c.sizes, "times_ms": c.times_ms,
             "exponents": {e: round(c.exponent(e), 3) for e in c.times_ms},
             "within_limit": c.exponent(bench.IRSCATTER) <= LIMIT} for c in curves]

