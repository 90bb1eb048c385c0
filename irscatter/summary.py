"""What `irscatter info` reports: a model's header, interface and op mix, from the XML (nothing is
computed, and weights are read only where an output port written without dims needs inference to
say whether it is a scalar or of dynamic rank; a missing weights file is reported, not refused)."""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any

from irscatter.errors import IRError
from irscatter.ir import loader
from irscatter.ir.graph import Graph, Model, output_name
from irscatter.ir.shapes import PartialShape, parse_partial_shape
from irscatter.ops import registry
from irscatter.runtime.model import compile_model


def _walk(graph: Graph):
    for layer in graph.layers:
        yield layer
        for body in layer.bodies.values():
            yield from _walk(body.graph)


def describe(xml_path: str | os.PathLike, bin_path: str | os.PathLike | None = None) -> dict[str, Any]:
    """`summarize` of the model at `xml_path`. Without its weights file the description is still
    made, and says which file is missing and how many constants need it; any other defect of
    the model is raised as the loader raises it."""
    model, problems = loader.read_model_collecting(xml_path, bin_path)
    other = [p for p in problems if p.label != "no-weights"]
    if other:
        raise other[0]
    info = summarize(model)
    if not problems:
        _settle_undeclared_shapes(model, info)
    if problems:
        default = os.path.splitext(str(xml_path))[0] + ".bin"
        info["missing_weights"] = {"file": str(bin_path) if bin_path is not None else default,
                                   "constants": len(problems)}
    return info


def _settle_undeclared_shapes(model: Model, info: dict[str, Any]) -> None:
    """An output port written without dims reads as a scalar, but OpenVINO writes a tensor of
    dynamic rank the same way: where inference can say which it is, the output gets the shape
    inference gives it (`[...]` for a dynamic rank), never a scalar it is not."""
    undeclared = [record for record in info["outputs"] if record["shape"] == []]
    if not undeclared:
        return
    try:
        inferred = {spec.name: spec for spec in compile_model(model).outputs}
    except IRError:
        return  # (validate says what is wrong; info describes the file as written)
    for record in undeclared:
        spec = inferred.get(record["name"])
        if spec is not None:
            record["shape"] = shape_record(spec.shape)
            record["element_type"] = record["element_type"] or str(spec.etype)


def shape_record(shape: PartialShape | None) -> list[int | str] | None:
    """A shape for JSON: a list whose static dims are numbers and dynamic ones their text ("?",
    "1..8"); None for an unknown shape, and ["..."] for a dynamic rank."""
    if shape is None:
        return None
    if not shape.rank_is_static:
        return ["..."]
    return [int(d) if d.is_static else str(d) for d in shape]


def _opset_order(name: str) -> tuple[int, str, int]:
    m = re.fullmatch(r"([A-Za-z_]*?)(\d+)", name)
    return (0, m.group(1), int(m.group(2))) if m and m.group(1) == "opset" else (1, name, 0)


def _declared_shape(text: Any) -> PartialShape | None:
    try:
        return parse_partial_shape(text) if isinstance(text, str) else None
    except ValueError:
        return None


def summarize(model: Model) -> dict[str, Any]:
    histogram: Counter[str] = Counter()
    opsets: Counter[str] = Counter()
    missing: list[dict[str, Any]] = []
    n_layers = 0
    for layer in _walk(model):
        n_layers += 1
        opsets[layer.version] += 1
        cls = registry.find(layer.type, layer.version)
        histogram[cls.label() if cls else f"{layer.type} ({layer.version})"] += 1
        if cls is None:
            missing.append({"id": layer.id, "name": layer.name, "type": layer.type, "version": layer.version})
    producers = {(e.to_layer, e.to_port): (e.from_layer, e.from_port) for e in model.edges}
    by_id = {layer.id: layer for layer in model.layers}
    outputs = []
    for r in model.results:
        port = None
        src = producers.get((r.id, r.inputs[0].id)) if r.inputs else None
        if src and src[0] in by_id:
            pos = by_id[src[0]].output_position(src[1])
            port = by_id[src[0]].outputs[pos] if pos is not None else None
        outputs.append({
            "name": output_name(r, port),
            "layer": r.name,
            "element_type": str(port.precision) if port and port.precision else None,
            "shape": shape_record(port.shape) if port else None,
        })
    return {
        "file": model.xml_path,
        "name": model.name,
        "ir_version": model.ir_version,
        "layers": n_layers,
        "inputs": [
            {
                "name": p.name,
                "names": list(p.outputs[0].names) if p.outputs else [],
                "element_type": p.attrs.get("element_type"),
                "shape": shape_record(_declared_shape(p.attrs.get("shape"))),
            }
            for p in model.parameters
        ],
        "outputs": outputs,
        "opsets": dict(sorted(opsets.items(), key=lambda item: _opset_order(item[0]))),
        "ops": dict(sorted(histogram.items())),
        "layers_without_kernel": missing,
        "bin_file": model.bin_path,
        "bin_size": model.bin_size,
        "missing_weights": None,
        "rt_info": model.rt_info,
    }
