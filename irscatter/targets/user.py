"""A user's own runtime as a target, named on the command line: `--target python:MODULE:NAME`.

`NAME` in the importable module `MODULE` is a class or function that makes an object with the
`Target` protocol's members (targets/protocol.py); it is called with the keyword arguments
`precision` (the `--target-precision`) and `properties` (the `--target-config` pairs, a dict),
as far as its signature names them. This is how Polygraphy's runners plug in: the user writes
the runtime's side, irscatter writes the models, feeds and judgement.

The runtime runs in irscatter's process. An exception it raises while running a request is a
finding about the layers of that request (a `TargetFailure` of kind "crashed" naming the
exception), never the end of the comparison; a runtime whose crashes take the process down
isolates itself, the way `OpenVINOTarget` runs OpenVINO in a `worker.WorkerProcess`.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.targets.protocol import Target
from irscatter.targets.worker import TargetFailure

PREFIX = "python:"


class UserTarget:
    """A user's runtime wrapped so that its exceptions become findings; other members (its
    `precision`, `ran_precision`, `infer_steps`, ...) are its own."""

    def __init__(self, runtime: Target) -> None:
        self.runtime = runtime
        self.name = getattr(runtime, "name", type(runtime).__name__)

    def infer(self, xml: Path, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        return self._guarded(self.runtime.infer, xml, feeds)

    def output_names(self, xml: Path) -> list[list[str]]:
        return self._guarded(self.runtime.output_names, xml)

    def describe(self) -> str:
        return str(self.runtime.describe())

    def close(self) -> None:
        self.runtime.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runtime, name)

    def _guarded(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except TargetFailure:
            raise
        except Exception as e:  # noqa: BLE001  (any failure of the user's runtime is a finding)
            raise TargetFailure("crashed", f"{self.name} raised {type(e).__name__}: {e}") from e


def load(spec: str, precision: str, properties: Mapping[str, str]) -> UserTarget:
    """The target `python:MODULE:NAME` names. Raises ValueError with a sentence when the
    spelling, the import, the call or the object made does not fit."""
    module_name, _, attribute = spec[len(PREFIX):].rpartition(":")
    if not module_name or not attribute:
        raise ValueError(f"{spec}: give python:MODULE:NAME, NAME a class or function in the importable MODULE")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001  (whatever importing the user's module raises)
        raise ValueError(f"{spec}: importing {module_name} failed: {type(e).__name__}: {e}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise ValueError(f"{spec}: {module_name} has no class or function {attribute}")
    given = {"precision": precision, "properties": dict(properties)}
    try:
        parameters = inspect.signature(factory).parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        runtime = factory(**{k: v for k, v in given.items() if takes_all or k in parameters})
    except Exception as e:  # noqa: BLE001  (whatever making the user's runtime raises)
        raise ValueError(f"{spec}: making the target failed: {type(e).__name__}: {e}") from None
    missing = [m for m in ("infer", "output_names", "describe", "close") if not callable(getattr(runtime, m, None))]
    if missing:
        raise ValueError(f"{spec}: the object made lacks the Target protocol's {', '.join(missing)}")
    return UserTarget(runtime)
