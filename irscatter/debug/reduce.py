"""Shrinking a failing model to a minimal one that still fails, and writing it up as a reproducer.

A check says whether a candidate model (an IR file and its inputs) fails: a target runtime
whose outputs leave irscatter's tolerance, or a user's command. The search keeps irscatter's
own value of every tensor, so any part of the graph can be cut away and its value fed instead:

1. the outputs: the first prefix of the topological order whose cut tensors fail (halving),
   then the fewest of that prefix's tensors that still fail (the last layer's own outputs
   first, else one tensor at a time);
2. the inputs: the latest point in the order before which everything can be fed irscatter's
   values and the candidate still fails (halving), then a pass over what is left, feeding each
   remaining layer's outputs instead of computing them where the failure survives it.

Values that irscatter's inference folds (shape arithmetic) are fed as constants, since the
target folds them too. The final candidate is checked again twice: a check that does not fail
every time is reported as not deterministic.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from irscatter.debug.compare import judge, sides_of
from irscatter.debug.extract import BOUNDARY, Cut, Written, first_holding, plan, prefix, write
from irscatter.debug.tolerances import Tolerances, at_device_precision
from irscatter.debug.verdicts import TensorResult
from irscatter.errors import PATTERN_ERRORS, Argument, UsageError, elide
from irscatter.runtime.inputs import save_npz
from irscatter.runtime.interpreter import CompiledModel
from irscatter.targets.protocol import Target
from irscatter.targets.worker import TargetFailure

Source = tuple[int, int]
_LINEAR_PASS_LIMIT = 200  # layers left after halving the inputs, above which no layer-by-layer pass is made


@dataclass
class Verdict:
    fails: bool
    detail: str
    actual: dict[str, np.ndarray] | None = None  # the target's outputs, by output name
    tensors: list[TensorResult] = field(default_factory=list)


Check = Callable[[Written, Mapping[Source, np.ndarray]], Verdict]


class TargetCheck:
    """Fails when the target's outputs leave irscatter's tolerance (or the target crashes,
    hangs or answers unstably on the candidate; refusing it is not a failure to keep)."""

    def __init__(self, compiled: CompiledModel, target: Target, tolerances: Tolerances) -> None:
        self.compiled, self.target, self.tolerances = compiled, target, at_device_precision(target, tolerances)

    def describe(self) -> str:
        return self.target.describe()

    def __call__(self, written: Written, values: Mapping[Source, np.ndarray]) -> Verdict:
        try:
            tensors, actual = judge(self.compiled, self.target, self.tolerances, written, values)
        except TargetFailure as e:
            return Verdict(e.kind in ("crashed", "hung", "unstable"), f"{sides_of(self.target)[0]} {e.kind}: {e.message}")
        failing = [t for t in tensors if not t.diff.passed]
        detail = "; ".join(f"{t.key}: {t.diff.summary()}" for t in failing) or "within tolerance"
        return Verdict(bool(failing), detail, actual, tensors)


class CommandCheck:
    """Fails when a shell command, given the candidate's `{model}` and `{inputs}`, exits with a
    non-zero status, or, with `pattern`, when its output matches the regular expression."""

    def __init__(self, command: str, pattern: str | None = None, timeout: float = 300.0) -> None:
        import re

        if "{model}" not in command:
            raise UsageError(Argument("command"), ": the command must name the candidate model as {model}",
                             value=command)
        self.command, self.timeout = command, timeout
        self.pattern: re.Pattern[str] | None = None
        if pattern:
            try:
                self.pattern = re.compile(pattern)
            except PATTERN_ERRORS as e:
                raise UsageError(Argument("pattern"), f" {elide(pattern)}: {e}", value=pattern) from None

    def describe(self) -> str:
        return f"the command {self.command!r}"

    def __call__(self, written: Written, values: Mapping[Source, np.ndarray]) -> Verdict:
        inputs = written.xml.parent / "inputs.npz"
        command = self.command.replace("{model}", shlex.quote(str(written.xml))).replace(
            "{inputs}", shlex.quote(str(inputs)))
        finished = _run_in_own_group(command, self.timeout)
        if finished is None:
            return Verdict(True, f"the command did not end within {self.timeout:g} s")
        returncode, output = finished
        if self.pattern is not None:
            found = self.pattern.search(output)
            return Verdict(bool(found), f"its output {'matches' if found else 'does not match'} the pattern")
        tail = " | ".join(line for line in output.strip().splitlines()[-3:])
        status = f"exit status {returncode}"
        return Verdict(returncode != 0, f"{status}: {elide(tail, 300)}" if tail else status)


def _run_in_own_group(command: str, timeout: float) -> tuple[int, str] | None:
    """Run a shell command in a process group of its own; its exit status and the tail of its
    output, or None when it did not end within `timeout` seconds. The whole group is killed
    then, so that what the shell started in the background (a runtime it launched) does not
    outlive the check. The output goes to a file, not into memory, and only its tail is read
    back: a command may print without end (a model dumped whole, a loop of warnings)."""
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(command, shell=True, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # the group ended on its own meanwhile
            proc.wait()
            return None
        return proc.returncode, _tail(log, OUTPUT_TAIL)


# How much of a --check command's output is kept (its end, where a failure is reported) and
# matched against --fail-regex.
OUTPUT_TAIL = 1 << 20


def _tail(log, size: int) -> str:
    """The last `size` bytes written to the file `log`, as text."""
    end = log.seek(0, 2)
    log.seek(max(0, end - size))
    return log.read().decode("utf-8", "replace")


@dataclass
class Reduction:
    reproducible: bool
    cut: Cut | None = None
    verdict: Verdict | None = None
    checks: int = 0
    seconds: float = 0.0
    deterministic: bool = True
    note: str = ""


class _Search:
    def __init__(self, compiled: CompiledModel, values: Mapping[Source, np.ndarray], check: Check,
                 folder: Path, progress: Callable[[int, int | None], None] | None = None) -> None:
        self.compiled, self.values, self.check, self.folder = compiled, values, check, folder
        self.progress = progress
        self.checks = 0
        self.graph = compiled.graph
        self.steps = self.graph.kernels
        self.params = tuple((spec.layer.id, 0) for spec in compiled.inputs)

    def trial(self, cut: Cut) -> Verdict:
        self.checks += 1
        written = self.write(cut, self.folder / f"candidate{self.checks}" / "model.xml")
        verdict = self.check(written, self.values)
        if self.progress is not None:
            self.progress(self.checks, None)
        return verdict

    def write(self, cut: Cut, xml: Path) -> Written:
        frozen = {src: self.values[src] for src in cut.inputs if self.graph.infos[src].value is not None}
        return write(self.compiled, cut, xml, self.values, frozen=frozen)

    def fails(self, cut: Cut) -> bool:
        return self.trial(cut).fails

    # --- step 1: the outputs ---

    def earliest_failing_outputs(self) -> Cut | None:
        if not self.fails(prefix(self.compiled, self.steps, len(self.steps) - 1, self.values)):
            return None
        end = first_holding(-1, len(self.steps) - 1,
                            lambda middle: self.fails(prefix(self.compiled, self.steps, middle, self.values)))
        cut = prefix(self.compiled, self.steps, end, self.values)
        last = self.steps[end]
        own = [src for src in cut.outputs if src[0] == last]
        for candidate in ([own] if own else []) + [[src] for src in cut.outputs if src[0] != last]:
            smaller = self._plan(candidate, cut.inputs)
            if self.fails(smaller):
                return smaller
        return cut

    def _plan(self, outputs: list[Source], inputs: tuple[Source, ...]) -> Cut:
        return plan(self.compiled, outputs, inputs, require_used=False)

    # --- step 2: the inputs ---

    def cut_before(self, cut: Cut, position: int) -> Cut:
        """`cut` with everything before its `position`-th layer fed instead of computed."""
        layers = [lid for lid in cut.layers if self.graph.type_of(lid) != "Const"]
        before = set(layers[:position])
        fed = set(cut.inputs)
        for lid in layers[position:]:
            fed.update(src for src in self.graph.inputs_of(lid) if src[0] in before)
        fed |= {src for src in cut.outputs if src[0] in before}
        return self._plan(list(cut.outputs), tuple(fed))

    def move_inputs_forward(self, cut: Cut) -> Cut:
        layers = [lid for lid in cut.layers if self.graph.type_of(lid) != "Const"]
        low, high = 0, len(layers)  # cutting before `low` still fails; before `high` is not tried
        best = cut
        while high - low > 1:
            middle = (low + high) // 2
            candidate = self.cut_before(cut, middle)
            if candidate.outputs and self.fails(candidate):
                low, best = middle, candidate
            else:
                high = middle
        if len(best.layers) > _LINEAR_PASS_LIMIT:
            return best  # one check per layer would take too long; the halving has done the bulk
        for lid in list(best.layers):
            if lid not in best.layers or self.graph.type_of(lid) in BOUNDARY:
                continue
            outputs = [src for src in self.graph.outputs_of(lid) if src in self.values]
            if any(src in best.outputs for src in outputs):
                continue
            candidate = self._plan(list(best.outputs), tuple(set(best.inputs) | set(outputs)))
            if candidate.layers != best.layers and self.fails(candidate):
                best = candidate
        return best


def reduce_model(compiled: CompiledModel, values: Mapping[Source, np.ndarray], check: Check, *,
                 repeats: int = 2, progress: Callable[[int, int | None], None] | None = None) -> Reduction:
    """Shrink `compiled` to a minimal model on which `check` still fails (`write_reproducer`
    then writes it up). `progress(checks, None)` is called after each check (how many there
    will be is not known in advance)."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="irscatter-reduce-") as folder:
        search = _Search(compiled, values, check, Path(folder), progress)
        whole = search._plan([compiled.graph.returned(spec.layer.id) for spec in compiled.outputs], search.params)
        if not search.fails(whole):
            return Reduction(False, checks=search.checks, seconds=time.perf_counter() - start,
                             note="the check passes on the whole model: the failure does not reproduce")
        outputs_cut = search.earliest_failing_outputs()
        if outputs_cut is None:
            return Reduction(False, checks=search.checks, seconds=time.perf_counter() - start,
                             note="the model fails as written but no cut of it as irscatter writes it fails: the "
                                  "failure depends on something of the original file (its rt_info, or fusions "
                                  "only the full model allows)")
        cut = search.move_inputs_forward(outputs_cut)
        final = search.trial(cut)
        again = [search.trial(cut).fails for _ in range(repeats)]
        deterministic = final.fails and all(again)
        checks = search.checks
    reduction = Reduction(True, cut, final, checks, time.perf_counter() - start, deterministic)
    if not deterministic:
        fails = sum(again) + final.fails
        reduction.note = f"the check is not deterministic: the reduced model failed {fails} of {repeats + 1} times"
    return reduction


def write_reproducer(compiled: CompiledModel, values: Mapping[Source, np.ndarray], reduction: Reduction,
                     check: TargetCheck | CommandCheck, out: Path, command: str) -> Path:
    """`out/`: model.xml + model.bin, inputs.npz, expected.npz (irscatter's values), actual.npz
    (the target's, when the check ran one) and README.md (the command that reproduces it)."""
    assert reduction.cut is not None
    out.mkdir(parents=True, exist_ok=True)
    frozen = {src: values[src] for src in reduction.cut.inputs if compiled.graph.infos[src].value is not None}
    written = write(compiled, reduction.cut, out / "model.xml", values, frozen=frozen)
    verdict = check(written, values)
    if verdict.actual is not None:
        save_npz(out / "actual.npz", verdict.actual)
    (out / "README.md").write_text(_readme(compiled, reduction, verdict, check, command), encoding="utf-8")
    return out


def _readme(compiled: CompiledModel, reduction: Reduction, verdict: Verdict, check, command: str) -> str:
    cut = reduction.cut
    assert cut is not None
    graph = compiled.graph
    layers = [graph.layers[lid] for lid in cut.layers if graph.type_of(lid) not in BOUNDARY]
    names = ", ".join(f'"{layer.name}" ({graph.op(layer.id).label()})' for layer in layers)
    total = len(graph.kernels)
    if isinstance(check, TargetCheck):
        target = check.target
        device = getattr(target, "device", "CPU")
        precision = getattr(target, "precision", "f32")
        again = (f"    irscatter compare model.xml --inputs inputs.npz --whole --target openvino:{device} "
                 f"--target-precision {precision}\n\n"
                 "or with OpenVINO alone (its outputs beside `expected.npz`, the values its op specifications "
                 "define):\n\n"
                 f"    python -c \"import numpy as np, openvino as ov; m = ov.Core().compile_model('model.xml', "
                 f"'{device}', {{'INFERENCE_PRECISION_HINT': '{precision}'}}); i = np.load('inputs.npz'); "
                 f"r = m({{k: i[k] for k in i.files}}); e = np.load('expected.npz'); "
                 f"[print(n, np.abs(r[n].astype(float) - e[n]).max()) for n in e.files]\"\n")
        what = f"{check.describe()} departs from irscatter (the op specifications' values)"
        name = sides_of(target)[0]
        sides = (f"Which side is which: irscatter (`expected.npz`, the op specifications' values) is the reference; "
                 f"{name} ({check.describe()}, `actual.npz`) is judged against it, and every value below is "
                 "named by its side.")
    else:
        again = f"    {check.command.replace('{model}', 'model.xml').replace('{inputs}', 'inputs.npz')}\n"
        what = f"{check.describe()} fails"
        name, sides = "the command", ""
    lines = [
        f"# Reproducer: {what}",
        "",
        f"Reduced from `{compiled.model.source}` ({total} layers) to {len(layers)} "
        f"layer{'s' if len(layers) != 1 else ''}: {names}.",
        f"{reduction.checks} checks in {reduction.seconds:.1f} s; made by `{command}`.",
        "",
        "* `model.xml`, `model.bin`: the model",
        "* `inputs.npz`: its inputs (irscatter's values of the tensors it was cut from)",
        "* `expected.npz`: irscatter's outputs",
    ]
    if verdict.actual is not None:
        lines.append(f"* `actual.npz`: {name}'s outputs")
    if sides:
        lines += ["", sides]
    lines += ["", "Reproduce it with", "", again.rstrip("\n"), "", f"What differs: {verdict.detail}"]
    if reduction.note:
        lines += ["", f"Note: {reduction.note}."]
    return "\n".join(lines) + "\n"
