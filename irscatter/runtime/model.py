"""The runtime's view of a loaded model: an IR `Model` that can compile and run itself.

`irscatter.read_model` builds models of this class, so `model.run(feeds)` works on what it
returns; the graph classes in `irscatter.ir` stay plain data that know nothing of running.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from pydantic import PrivateAttr

from irscatter.ir.graph import Model, gc_paused
from irscatter.runtime.interpreter import CompiledModel


def compile_model(model: Model) -> CompiledModel:
    """Check the graph, resolve every op and plan the run (done once per model, then cached)."""
    cached = getattr(model, "_compiled", None)
    if cached is not None:
        return cached
    with gc_paused():
        compiled = CompiledModel(model)
    if isinstance(model, RunnableModel):
        model._compiled = compiled
    return compiled


class RunnableModel(Model):
    """A loaded IR model that `run()` interprets; the fields describe the graph as written."""

    _compiled: Any = PrivateAttr(default=None)

    def compile(self) -> CompiledModel:
        """Check the graph, resolve every op and plan the run (done once, then cached)."""
        return compile_model(self)

    def run(
        self,
        feeds: Mapping[str, Any] | None = None,
        *,
        intermediate: bool = False,
        hook: Any = None,
        donate: Iterable[str] = (),
    ) -> dict[str, np.ndarray]:
        """Run the model on `feeds` (keyed by Parameter name or tensor name).

        Returns the outputs keyed by output tensor name in the XML order of Results, or with
        `intermediate=True` every computed tensor keyed by `"<layer name>:<port id>"`.
        `hook(layer, inputs, outputs)` is called after each layer's kernel has run.

        Fed arrays are never written, except those named in `donate`: their buffers are
        handed over, and a scatter that is their only reader may write its output into
        them (an output may then share memory with the donated array, whose contents are
        unspecified after the run). Intermediate buffers are reused the same way whenever
        nothing else can see them; `intermediate=True` and a `hook` turn all reuse off.
        """
        return self.compile().run(feeds or {}, intermediate=intermediate, hook=hook, donate=donate)
