"""What irscatter asks of a runtime it compares itself with: the `Target` protocol.

A target runs an IR file that irscatter writes (one layer fed irscatter's values, a prefix of the
graph, or the model as it is) on named feeds, and hands back its outputs in the file's Result
order. Anything with these members is a target: OpenVINO on a device (`targets.openvino`), or a
user's own runtime passed to `debug.compare` functions. A target that cannot run a request
raises `TargetFailure` (`targets.worker`) with the kind of failure (refused, crashed, hung, ...),
which the comparison records against the layers it was running rather than stopping.

Optional members a target may have, which the comparison uses when present:

* `infer_steps(xml, steps)`: one infer request run on each step's feeds in turn, so that a
  stateful model's variables carry over (`compare --steps`); without it, steps are refused.
* `precision` and `ran_precision()`: the inference precision asked for and the one the device
  really runs, so that tolerances and precision emulation follow what the target computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Target(Protocol):
    """A runtime to compare with: it runs an IR file on named feeds."""

    name: str  # how reports name it: "openvino:CPU"

    def infer(self, xml: Path, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs of the model in `xml`, fed `feeds` by input tensor name, in Result order."""
        ...

    def output_names(self, xml: Path) -> list[list[str]]:
        """The tensor names of each output, in the order `infer` returns them."""
        ...

    def describe(self) -> str:
        """One line for reports: the runtime, its version and device, what it runs in."""
        ...

    def close(self) -> None:
        """Release the runtime (its worker process); the target is not used afterwards."""
        ...
