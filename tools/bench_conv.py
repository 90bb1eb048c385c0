"""Convolutions of real CNNs, irscatter beside OpenVINO's CPU plugin (f32), in one run.

    python tools/bench_conv.py [--only pw,dw9] [--batch 1,8] [--runs 5] [--busy] [--json conv.json]

Each shape is one Convolution-1 or GroupConvolution-1 layer with Const filters, written as IR
and timed through both engines with `tools/bench.py`'s machinery (engines in blocks, rounds
interleaved, the median of `--runs` calls). Beside each time the table names the formulation
irscatter's kernel takes for the shape (`plans.plan_forward(...).name`).

`--busy` runs a spinning process beside the timings, as another program would on a shared
machine: that is where threads that wait for each other by spinning lose most.
`--policies split,one,blas` times irscatter once per thread policy of the convolutions (see
`irscatter/ops/common/threads.py`), each a compiled model of its own, the policies taking turns
like engines, to compare them on the same shapes under the same noise.
`--baseline DIR` also times the irscatter of another source tree (an earlier commit, e.g.
`git archive COMMIT | tar -x -C DIR`) in a worker process, taking turns with the others: a
before/after comparison under the same noise.
`--small` shrinks every shape so that the script itself can be tested in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench

from irscatter.ir.writer import IRWriter

F32 = np.dtype(np.float32)
BASELINE = "irscatter (baseline)"


@dataclass(frozen=True)
class Shape:
    key: str
    title: str
    channels: int  # C_IN of the data
    spatial: tuple[int, ...]
    out_channels: int
    kernel: tuple[int, ...]
    groups: int = 1
    stride: int = 1
    pad: tuple[int, ...] | None = None  # per axis, both sides; None: half the kernel

    def pads(self) -> tuple[int, ...]:
        return self.pad if self.pad is not None else tuple(k // 2 for k in self.kernel)

    def out_spatial(self) -> tuple[int, ...]:
        return tuple((s + 2 * p - k) // self.stride + 1 for s, p, k in zip(self.spatial, self.pads(), self.kernel))

    def shrunk(self) -> Shape:
        """A tiny version of the same geometry (for testing the script)."""
        groups = min(self.groups, 4)
        per_group_in, per_group_out = self.channels // self.groups, self.out_channels // self.groups
        spatial = tuple(max(k + 1, min(s, 6)) for s, k in zip(self.spatial, self.kernel))
        return Shape(self.key, self.title, groups * min(per_group_in, 4), spatial, groups * min(per_group_out, 4),
                     self.kernel, groups, self.stride, self.pad)


SHAPES = [
    Shape("pw", "1x1 pointwise 256->512, 28x28", 256, (28, 28), 512, (1, 1)),
    Shape("pw_s2", "1x1 stride 2 (ResNet downsample) 256->512, 56x56", 256, (56, 56), 512, (1, 1), stride=2),
    Shape("d3", "3x3 dense 64->64, 56x56", 64, (56, 56), 64, (3, 3)),
    Shape("d3_s2", "3x3 dense 64->64, 56x56, stride 2", 64, (56, 56), 64, (3, 3), stride=2),
    Shape("d3_small", "3x3 dense 384->384, 8x8 (Inception-v4 C)", 384, (8, 8), 384, (3, 3)),
    Shape("d1x7", "1x7 dense 192->224, 17x17 (Inception-v4 B)", 192, (17, 17), 224, (1, 7)),
    Shape("stem7", "7x7 stem 3->64, 224x224, stride 2", 3, (224, 224), 64, (7, 7), stride=2),
    Shape("dw3", "depthwise 3x3, 144 ch, 56x56 (MobileNetV2)", 144, (56, 56), 144, (3, 3), groups=144),
    Shape("dw3_s2", "depthwise 3x3, 144 ch, 56x56, stride 2", 144, (56, 56), 144, (3, 3), groups=144, stride=2),
    Shape("dw5", "depthwise 5x5, 240 ch, 28x28 (EfficientNet-B0)", 240, (28, 28), 240, (5, 5), groups=240),
    Shape("dw7", "depthwise 7x7, 96 ch, 56x56 (ConvNeXt-T)", 96, (56, 56), 96, (7, 7), groups=96),
    Shape("dw9", "depthwise 9x9, 768 ch, 32x32 (ConvMixer-768/32)", 768, (32, 32), 768, (9, 9), groups=768),
    Shape("g32", "grouped 3x3, 128->128, 32 groups, 56x56 (ResNeXt-50)", 128, (56, 56), 128, (3, 3), groups=32),
    Shape("g32_small", "grouped 3x3, 1024->1024, 32 groups, 7x7 (ResNeXt-50)", 1024, (7, 7), 1024, (3, 3),
          groups=32),
    Shape("c3d", "3-D 3x3x3 32->32, 8x28x28", 32, (8, 28, 28), 32, (3, 3, 3)),
    Shape("c1d", "1-D k3 256->256, length 1024", 256, (1024,), 256, (3,)),
    Shape("dw1d", "1-D depthwise k31, 256 ch, length 512 (Conformer)", 256, (512,), 256, (31,), groups=256),
]


def write(shape: Shape, batch: int, folder: Path) -> None:
    """One layer: Parameter data, Const filters, the convolution and its Result."""
    rng = np.random.default_rng(11)
    data = rng.standard_normal((batch, shape.channels, *shape.spatial), dtype=np.float32)
    per_in, per_out = shape.channels // shape.groups, shape.out_channels // shape.groups
    filters = rng.standard_normal((per_out * shape.groups, per_in, *shape.kernel), dtype=np.float32)
    filters *= np.float32(1 / np.sqrt(per_in * np.prod(shape.kernel)))
    if shape.groups > 1:
        op, filters = "GroupConvolution", filters.reshape(shape.groups, per_out, per_in, *shape.kernel)
    else:
        op = "Convolution"
    n = len(shape.spatial)
    pads = ",".join(map(str, shape.pads()))
    attrs = {"strides": ",".join([str(shape.stride)] * n), "dilations": ",".join(["1"] * n), "pads_begin": pads,
             "pads_end": pads, "auto_pad": "explicit"}
    out_shape = (batch, shape.out_channels, *shape.out_spatial())
    w = IRWriter(f"conv_{shape.key}")
    ids = [bench._parameter(w, "data", data.shape, F32), w.const("filters", filters)]
    conv = bench._one_op(w, op, "opset1", attrs, ids, [(data.shape, F32), (filters.shape, F32)],
                         (out_shape, F32, "out"), name="conv")
    w.result("out/sink", conv, *bench._port(out_shape, F32))
    bench._save(w, folder)
    np.savez(folder / "feeds.npz", data=data)


def formulation(shape: Shape, batch: int) -> str:
    """The name of the path irscatter's kernel takes for the shape."""
    from irscatter.ops.convolution.plans import plan_forward

    per_in, per_out = shape.channels // shape.groups, shape.out_channels // shape.groups
    n = len(shape.spatial)
    plan = plan_forward((batch, shape.groups, per_in, *shape.spatial), (shape.groups, per_out, per_in, *shape.kernel),
                        F32, [shape.stride] * n, [1] * n, shape.pads(), shape.out_spatial())
    return plan.name if plan is not None else "per-offset"


def busy_neighbour() -> subprocess.Popen:
    """Another program keeping one core busy, as on a shared machine (until this one ends)."""
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass"
    return subprocess.Popen([sys.executable, "-c", spin])


# A sampler takes k and returns the times of k calls, in seconds.
Sampler = Callable[[int], list[float]]


def in_process(prepared: bench.Prepared, policy: str | None = None) -> Sampler:
    """Times `prepared`'s calls here, under thread policy `policy` when given (set before every
    call, so each compiled model plans its layer under its own policy)."""
    from irscatter.ops.common import threads

    def sample(k: int) -> list[float]:
        times = []
        for _ in range(k):
            if policy is not None:
                threads.use(policy)
            start = time.perf_counter()
            prepared.call()
            times.append(time.perf_counter() - start)
        return times
    return sample


WORKER = """
import json, sys, time
import numpy as np
import irscatter
for line in sys.stdin:
    command, arg = line.split()
    if command == "load":
        with np.load(arg + "/feeds.npz") as f:
            feeds = {k: f[k] for k in f.files}
        model = irscatter.read_model(arg + "/model.xml")
        model.compile()
        print("[]", flush=True)
        continue
    times = []
    for _ in range(int(arg)):
        start = time.perf_counter()
        model.run(feeds)
        times.append(time.perf_counter() - start)
    print(json.dumps(times), flush=True)
"""


class Worker:
    """The irscatter of another source tree (`--baseline`) in a worker process, which times its
    own calls, so that the pipe costs nothing; one process for the whole run."""

    def __init__(self, source: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(source))
        self.process = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env, cwd=source)

    def ask(self, command: str, arg: object) -> list[float]:
        self.process.stdin.write(f"{command} {arg}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError("the baseline worker ended")
        return json.loads(answer)

    def sampler(self, folder: Path) -> Sampler:
        self.ask("load", folder)
        return lambda k: self.ask("time", k)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def time_engines(samplers: dict[str, Sampler], runs: int, pause: float) -> dict[str, float]:
    """Median ms per engine: one warm-up call each, then rounds in which every engine takes a
    block of calls, after `pause` seconds (OpenBLAS's and OpenVINO's threads spin for a while
    after a call before they sleep, on the cores the next engine needs: one untimed call is too
    short for them) and an untimed call."""
    samples: dict[str, list[float]] = {name: [] for name in samplers}
    for sample in samplers.values():
        sample(1)
    rounds = min(runs, 5)
    for r in range(rounds):
        for name, sample in samplers.items():
            time.sleep(pause)
            samples[name] += sample(1 + runs // rounds + (r < runs % rounds))[1:]
    return {name: 1e3 * statistics.median(s) for name, s in samples.items()}


def measure(folder: Path, engines: list[str], policies: list[str], baseline: Worker | None, runs: int,
            pause: float) -> dict:
    workload = bench.Workload("conv", "conv", lambda *_: None)
    samplers: dict[str, Sampler] = {}
    if baseline is not None:
        samplers[BASELINE] = baseline.sampler(folder)
    for engine in engines:
        if engine == bench.IRSCATTER and policies:
            for name in policies:
                samplers[f"{bench.IRSCATTER} [{name}]"] = in_process(bench.prepare(engine, workload, folder), name)
        else:
            samplers[engine] = in_process(bench.prepare(engine, workload, folder))
    return time_engines(samplers, runs, pause)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated shape keys")
    parser.add_argument("--batch", default="1,8", help="comma-separated batch sizes")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--busy", action="store_true", help="a spinning process beside the timings")
    parser.add_argument("--policies", help="comma-separated thread policies to time irscatter under (threads.POLICIES)")
    parser.add_argument("--no-openvino", action="store_true", help="time irscatter alone")
    parser.add_argument("--baseline", type=Path, help="the source tree of an earlier irscatter, timed beside")
    parser.add_argument("--json", type=Path, default=Path("bench_conv.json"))
    parser.add_argument("--small", action="store_true", help="tiny sizes: checks the script, measures nothing")
    parser.add_argument("--pause", type=float, default=0.3, help="seconds between two engines' blocks")
    args = parser.parse_args(argv)
    shapes = SHAPES
    if args.only:
        keys = args.only.split(",")
        shapes = [s for s in SHAPES if s.key in keys]
        if not shapes:
            parser.error(f"no shape matches {args.only}")
    policies = args.policies.split(",") if args.policies else []
    engines = [bench.IRSCATTER] + ([] if args.no_openvino or bench.OPENVINO not in bench.installed_engines()
                                   else [bench.OPENVINO])
    batches = [int(b) for b in args.batch.split(",")]
    neighbour = busy_neighbour() if args.busy else None
    baseline = Worker(args.baseline.resolve()) if args.baseline else None
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="irscatter-conv-") as tmp:
            for shape in shapes:
                shape = shape.shrunk() if args.small else shape
                for batch in batches:
                    folder = Path(tmp) / f"{shape.key}_{batch}"
                    write(shape, batch, folder)
                    times = measure(folder, engines, policies, baseline, args.runs, args.pause)
                    row = {"key": shape.key, "title": shape.title, "batch": batch, "times_ms": times,
                           "path": formulation(shape, batch)}
                    rows.append(row)
                    print(format_row(row), flush=True)
    finally:
        if baseline is not None:
            baseline.close()
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()
    args.json.write_text(json.dumps({"busy": args.busy, "policies": policies, "baseline": str(args.baseline),
                                     "load": os.getloadavg(), "runs": args.runs, "small": args.small, "rows": rows},
                                    indent=2))
    print(f"wrote {args.json}")
    return 0


def format_row(row: dict) -> str:
    """Times in ms; the ratio is irscatter's time over OpenVINO's (above 1: irscatter is slower)."""
    times = row["times_ms"]  # the baseline first, then irscatter, then OpenVINO
    peer = times.get(bench.OPENVINO)
    cells = []
    for name, ms in times.items():
        if name != bench.OPENVINO:
            cells.append(f"{name} {ms:8.2f} ms" + (f" ({ms / peer:5.2f}x)" if peer else ""))
    if peer:
        cells.append(f"OpenVINO {peer:8.2f} ms")
    return f"{row['key']:<10} N={row['batch']:<2} " + "  ".join(cells) + f"  [{row['path']}]"


if __name__ == "__main__":
    sys.exit(main())
