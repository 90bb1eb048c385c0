"""Judging each distinct layer of a corpus once (`campaign --ops`).

A layer's signature is what decides how a kernel computes it: its type and version, its
attributes, its bodies, and for each input the element type, the shape and whether it is a
constant (with the value, when it is a small one, such as axes or a target shape; the
contents of a large one, such as weights, do not change which kernel runs). Thousands of
models hold a few hundred signatures: the same convolution is judged once, and each signature
lists the models that hold it.

Three steps, each a task run in a case's own process:

1. `signatures`: a model's signatures (it is compiled, not run);
2. `prepare`: a model run once by irscatter, and a one-layer model written for each signature
   assigned to it (the first model holding it, by name), fed irscatter's values of the
   layer's inputs in that model: `model.xml`, `inputs.npz`, `expected.npz`;
3. `judge_op`: one such model on the target, against irscatter's values. Its folder is the
   reproducer.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.api import read_model, validate
from irscatter.checks.conformance import finding_line
from irscatter.debug import compare
from irscatter.debug.campaign.judge import model_feeds, verdict
from irscatter.debug.campaign.task import Task
from irscatter.debug.extract import plan, write
from irscatter.errors import IRError
from irscatter.runtime import steps
from irscatter.runtime.interpreter import CompiledModel
from irscatter.targets.protocol import Target

# An integer or boolean constant input of at most this many elements (axes, a target shape,
# indices) is part of the signature by its value; a float constant (weights) only by its type
# and shape.
SMALL_CONSTANT = 16
# Layers a target cannot be asked about alone (as `compare` leaves them out).
_NOT_ALONE = {"ReadValue", "Assign", "Multinomial"}


def signatures(work: tuple[Task, Target]) -> list[dict[str, Any]] | tuple[str, str]:
    """The distinct signatures of a model's layers: `{"digest", "op", "text", "layer"}`, the
    first layer holding each; `("invalid", why)` for a model `validate` finds an error in."""
    task, _ = work
    xml = Path(task.folder) / "model.xml"
    checked = validate(xml)
    if checked.errors:
        return ("invalid", finding_line(checked.errors[0], str(xml)))
    compiled = read_model(xml).compile()
    found: dict[str, dict[str, Any]] = {}
    for lid in compiled.graph.kernels:
        op = compiled.graph.op(lid)
        if compiled.graph.type_of(lid) in _NOT_ALONE or op.domain not in ("opset", "extension"):
            continue
        text = signature_text(compiled, lid)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        found.setdefault(digest, {"digest": digest, "op": op.label(), "text": text, "layer": lid})
    return list(found.values())


def signature_text(compiled: CompiledModel, lid: int) -> str:
    graph = compiled.graph
    layer, op = graph.layers[lid], graph.op(lid)
    inputs: list[list[Any] | None] = []  # None: an input left unconnected
    for src in graph.sources[lid]:
        if src is None:
            inputs.append(None)
            continue
        info = graph.infos[src]
        described: list[Any] = [str(info.etype), str(info.shape)]
        if _constant(compiled, src):
            value = graph.layers[src[0]].const_value if info.value is None else info.value
            small = value is not None and np.size(value) <= SMALL_CONSTANT and np.asarray(value).dtype.kind in "biu"
            described.append(np.asarray(value).tolist() if small else "const")
        inputs.append(described)
    bodies = (hashlib.sha256(repr(sorted(layer.bodies.items())).encode()).hexdigest()[:16]
              if layer.bodies else None)
    return json.dumps({"type": op.type_name, "version": op.version, "domain": op.domain,
                       "attrs": dict(sorted(layer.attrs.items())), "inputs": inputs, "bodies": bodies},
                      sort_keys=True, default=str)


def _constant(compiled: CompiledModel, src: tuple[int, int]) -> bool:
    """Whether the target sees the input as a constant (as `compare` writes it)."""
    info = compiled.graph.infos[src]
    return compiled.graph.type_of(src[0]) == "Const" or info.value is not None or info.etype.is_packed


def prepare(work: tuple[Task, Target]) -> dict[str, str | None]:
    """One-layer models of the signatures `task.extra` assigns to this model (`[(digest,
    layer id, folder)]`): each digest to None when written, else to why not."""
    task, _ = work
    compiled = read_model(Path(task.folder) / "model.xml").compile()
    feeds = model_feeds(compiled, Path(task.folder), task.settings.seed)
    if steps.has_steps(feeds):  # a stateful model: the values of its first step
        feeds = steps.split_steps(feeds, 1)[0]
    values = compare.reference_values(compiled, feeds)
    out: dict[str, str | None] = {}
    for digest, lid, folder in task.extra:
        try:
            write_layer(compiled, lid, values, Path(folder))
            out[digest] = None
        except IRError as e:
            out[digest] = f"irscatter could not write it alone: {e}"
    return out


def write_layer(compiled: CompiledModel, lid: int, values: Mapping[compare.Source, np.ndarray], folder: Path) -> None:
    """The layer alone, its constant inputs kept constant (values irscatter's inference folds
    written as Consts), the others fed irscatter's values: model.xml, inputs.npz, expected.npz."""
    graph = compiled.graph
    sources = graph.inputs_of(lid)
    folded = {src: values[src] for src in sources if graph.type_of(src[0]) != "Const" and _constant(compiled, src)}
    fed = list(dict.fromkeys(src for src in sources if not _constant(compiled, src)))  # (x * x: one input)
    outputs = [src for src in graph.outputs_of(lid) if src in values]
    cut = plan(compiled, outputs, [*fed, *folded], require_used=False)
    if folder.exists():
        shutil.rmtree(folder)
    write(compiled, cut, folder / "model.xml", values, frozen=folded, name=f"{graph.type_of(lid)}_alone")


def judge_op(work: tuple[Task, Target]) -> dict[str, Any]:
    """A one-layer model (a folder `prepare` wrote) on the target, against irscatter's values."""
    task, target = work
    folder = Path(task.folder)
    compiled = read_model(folder / "model.xml").compile()
    feeds = model_feeds(compiled, folder, task.settings.seed)
    values = compare.reference_values(compiled, feeds)
    report = compare.compare_whole(compiled, feeds, target, task.settings.tolerances(), values=values)
    record = verdict(report)
    record["target_detail"] = target.describe()
    layer = compiled.graph.kernels[0]
    op = compiled.graph.op(layer).label()
    record["ops"] = [op]
    if record["status"] != "passed":
        record.update(layer=f"{compiled.graph.layers[layer].name} ({op})", layer_op=op, reproducer=str(folder))
    return record
