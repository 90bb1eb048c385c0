"""What a campaign is asked to do, and the unit of work shipped to a worker.

`Settings` and `Task` are plain picklable records: a task names a model folder (never its
contents: a worker reads the weights itself, from a filesystem every worker sees), the
settings, and the target factory, so that shipping one to a process of the pool or to a Ray
node costs a few hundred bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from irscatter.debug.compare import PRECISIONS, open_target
from irscatter.debug.tolerances import Tolerances, parse_override
from irscatter.errors import Argument, UsageError
from irscatter.targets.protocol import Target


def irscatter_version() -> str:
    try:
        return metadata.version("irscatter")
    except metadata.PackageNotFoundError:  # (run from a source tree that was never installed)
        return "unknown"


def installed_versions(target: str) -> tuple[tuple[str, str], ...]:
    """irscatter's version and, for a target that is an installed package (OpenVINO,
    onnxruntime), the package's, from its metadata (nothing is imported)."""
    found = [("irscatter", irscatter_version())]
    package = target.split(":")[0].strip().lower()
    if package in ("openvino", "onnxruntime"):
        try:
            found.append((package, metadata.version(package)))
        except metadata.PackageNotFoundError:
            pass
    return tuple(found)


@dataclass(frozen=True)
class Settings:
    """How every case is judged. `target` is the target's spelling (`openvino:CPU`), or the
    name of the target a `factory` makes; the fields up to `reduce` decide whether a case
    already in the database was judged the same way (`key`), the limits do not."""

    target: str = "openvino:CPU"
    precision: str = "f32"
    rtol: float | None = None
    atol: float | None = None
    tol: tuple[str, ...] = ()  # PATTERN=RTOL[,ATOL], as compare's --tol
    properties: tuple[tuple[str, str], ...] = ()  # passed to OpenVINO's compile_model beside the precision
    seed: int = 0  # of the inputs drawn for a model without inputs.npz
    reduce: bool = True  # reduce a diverging model to a reproducer
    ops: bool = False  # judge each distinct layer signature once instead of each model
    timeout: float = 600.0  # seconds a case may take
    memory_mb: float | None = None  # address space a case may take beyond what its worker has mapped
    target_timeout: float | None = None  # seconds the target may take on one request (`request_timeout`)
    # irscatter's version and the target runtime's, read where the campaign starts: a case judged
    # by other versions is judged again rather than resumed.
    versions: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.target.startswith("openvino") and ":" not in self.target:
            object.__setattr__(self, "target", "openvino:CPU")
        if not self.versions:
            object.__setattr__(self, "versions", installed_versions(self.target))

    def key(self) -> str:
        """The settings that decide a verdict, as one text (a database column)."""
        return json.dumps({"precision": self.precision, "rtol": self.rtol, "atol": self.atol, "tol": list(self.tol),
                           "properties": [list(p) for p in self.properties], "seed": self.seed, "reduce": self.reduce,
                           "versions": dict(self.versions)}, sort_keys=True)

    def tolerances(self) -> Tolerances:
        return Tolerances(self.precision, self.rtol, self.atol, tuple(parse_override(t) for t in self.tol))

    def request_timeout(self) -> float:
        """Half a case's time, within 30 s (starting OpenVINO takes a few seconds) and 120 s."""
        return self.target_timeout if self.target_timeout is not None else min(120.0, max(30.0, self.timeout / 2))


# A target factory: given the settings, a target (OpenVINO by default). It is pickled into every
# task, so it must be a top-level function or class, importable where the workers run.
TargetFactory = Callable[[Settings], Target]


def check_spelling(settings: Settings) -> None:
    """Refuse a target or precision `openvino_target` would refuse, before any work (whether
    the device is there, a worker finds out)."""
    if settings.target.partition(":")[0] != "openvino":
        raise UsageError(Argument("target"), f' {settings.target}: the targets are "openvino" and "openvino:DEVICE"',
                         value=settings.target)
    if settings.precision not in PRECISIONS:
        raise UsageError(Argument("precision"), f" must be one of {', '.join(PRECISIONS)}, got {settings.precision}",
                         value=settings.precision)
    settings.tolerances()  # a tolerance override that does not parse


def openvino_target(settings: Settings) -> Target:
    """The target `settings.target` spells, at `settings.precision` (`compare.open_target`)."""
    return open_target(settings.target, settings.precision, settings.request_timeout(), dict(settings.properties))


@dataclass(frozen=True)
class Task:
    """One piece of work for a worker: `kind` is "model" (judge a model), "signatures" (list a
    model's layer signatures), "prepare" (write one-layer models of some of them, fed the
    model's values) or "op" (judge one such one-layer model)."""

    kind: str
    name: str  # the case's name (a model folder below its corpus, or an op signature)
    folder: str  # the model folder, or an op's one-layer model folder
    identity: str  # content hash, or the signature's digest
    settings: Settings
    out: str  # the campaign's output folder (reproducers, one-layer models)
    factory: TargetFactory | None = None  # None: OpenVINO as `settings.target` spells it
    extra: Any = None  # prepare: [(digest, layer id, folder)]; op: (signature text, holders)

    def make_target(self) -> Target:
        return (self.factory or openvino_target)(self.settings)

    def target_key(self) -> tuple[Any, ...]:
        s = self.settings
        return (self.factory, s.target, s.precision, s.properties, s.request_timeout())


def default_memory_mb(workers: int) -> float | None:
    """A case's share of this machine's memory when `workers` cases run at once (None where
    the machine does not say)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return round(total / max(1, workers) / (1 << 20))
