"""The public entry points: load a model, compile it, validate it.

This module sits above the runtime, so the models it loads can run themselves and sub-graph
ops find the interpreter's body compiler installed (importing `irscatter.runtime` does that).
"""

from __future__ import annotations

import os

import numpy as np

from irscatter.checks import conformance
from irscatter.ir import loader
from irscatter.ir.graph import Model
from irscatter.runtime.interpreter import CompiledModel
from irscatter.runtime.model import RunnableModel
from irscatter.runtime.model import compile_model as _compile


def read_model(xml_path: str | os.PathLike, bin_path: str | os.PathLike | None = None) -> RunnableModel:
    """Load an IR model (`.bin` defaults to the xml's sibling); `model.run(feeds)` runs it."""
    return loader.read_model(xml_path, bin_path, model_class=RunnableModel)  # type: ignore[return-value]


def parse_model(xml: bytes | str, weights: bytes | np.ndarray | None = None, *,
                source: str = "<memory>") -> RunnableModel:
    """Load an IR model from memory (`weights` are the `.bin` bytes)."""
    return loader.parse_model(xml, weights, source=source, model_class=RunnableModel)  # type: ignore[return-value]


def compile_model(model: Model | str | os.PathLike, bin_path: str | os.PathLike | None = None) -> CompiledModel:
    """A model checked, resolved and planned for running: a loaded `Model` or the path of its `.xml`.

    Each call gives a compiled model with variables of its own (the plan is made once per model
    and shared), as each of OpenVINO's infer requests has its own state."""
    if not isinstance(model, Model):
        model = read_model(model, bin_path)
    return _compile(model).new_request()


validate = conformance.validate  # re-exported here, above the runtime that bodies need
