"""The public entry points: load a model, compile it, validate it.

This module sits above the runtime, so the models it loads can run themselves and sub-graph
ops find the interpreter's body compiler installed (importing `irscatter.runtime` does that).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from irscatter.checks import conformance
from irscatter.errors import ExecutionError, FileAccessError, LoadError
from irscatter.ir import loader, opsets, snippets
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer, Model
from irscatter.ops import registry
from irscatter.ops.functional import run_op
from irscatter.runtime.interpreter import CompiledModel, as_array, caller_owned
from irscatter.runtime.model import RunnableModel
from irscatter.runtime.model import compile_model as _compile


def read_model(xml_path: str | os.PathLike, bin_path: str | os.PathLike | None = None) -> RunnableModel:
    """Load an IR model (`.bin` defaults to the xml's sibling); `model.run(feeds)` runs it.

    The `.bin` is memory-mapped and its weights read as runs need them: the model runs on the
    file as it was when read, and refuses to compile or run (`FileAccessError`, label
    `weights-changed`) once the file has changed since (written to, cut short, removed or
    renamed over). Read the model again to run on the new file."""
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


def parse_layer(xml: bytes | str | os.PathLike, *, source: str | None = None) -> Layer:
    """A bare `<layer>` element (text, bytes, or the path of a file holding one), as the op
    specifications show them. A missing id, name or version takes a default (see
    `irscatter.ir.loader.parse_layer`). A snippet that does not parse as written is mended as
    the `examples` command mends spec pages (`irscatter.ir.snippets.repair`: a literal `...`
    in the tag, attributes on `<layer>` rather than `<data>`, ...) and parsed again; if that
    fails too, the error is the one about the text as written."""
    if isinstance(xml, os.PathLike):
        path = os.fspath(xml)
        try:
            with open(path, "rb") as f:
                xml = f.read()
        except OSError as e:
            raise FileAccessError(f"cannot read the layer file: {e.strerror}", file=path) from None
        source = source or path
    source = source or "<memory>"
    try:
        return loader.parse_layer(xml, source=source)
    except LoadError as first:
        text = xml.decode("utf-8", "replace") if isinstance(xml, bytes) else xml
        kind = re.search(r'\btype\s*=\s*"([^"]*)"', text)
        mended, _ = snippets.repair(text.strip(), opsets.newest_opset_holding(kind.group(1) if kind else ""))
        try:
            return loader.parse_layer(mended, source=source)
        except LoadError:
            raise first from None


def run_layer(layer: Layer | bytes | str, inputs: Sequence[Any]) -> list[np.ndarray]:
    """Run one layer on numpy inputs (one per input port, in port order) and return its
    outputs in port order: what unit-testing an example layer of the op spec means.

    The layer's attributes are parsed with its op's schema and every inference check of the
    op applies, as in a model. A Python list or scalar takes the element type its port
    declares (f32 where it declares none); an array keeps its own. The outputs are the
    caller's own arrays (never views of the inputs); the inputs are never written."""
    if not isinstance(layer, Layer):
        layer = parse_layer(layer)
    op = registry.instantiate(layer)
    inputs = list(inputs)
    if len(inputs) != len(layer.inputs):
        raise ExecutionError(f"the layer has {len(layer.inputs)} input ports, {len(inputs)} inputs were given",
                             layer=layer.ref, label="input-count")
    arrays = []
    for i, value in enumerate(inputs):
        if isinstance(value, (np.ndarray, np.generic)):
            arrays.append(np.asarray(value))
            continue
        etype = (layer.inputs[i].precision if i < len(layer.inputs) else None) or ElementType.f32
        try:
            arrays.append(as_array(value, etype.dtype))
        except ValueError as e:
            raise ExecutionError(f"the value cannot be read as {etype}: {e}", layer=layer.ref, port=f"input {i}",
                                 label="feed-dtype") from None
    out = run_op(op, arrays)
    return caller_owned(list(out) if isinstance(out, tuple) else [out], arrays)


validate = conformance.validate  # re-exported here, above the runtime that bodies need
