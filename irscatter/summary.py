"""What `irscatter info` reports: a model's header, interface and op mix, from the XML alone
(no weights are read and nothing is computed)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from irscatter.ir.graph import Graph, Model, output_name
from irscatter.ops import registry


def _walk(graph: Graph):
    for layer in graph.layers:
        yield layer
        for body in layer.bodies.values():
            yield from _walk(body.graph)


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
            "precision": str(port.precision) if port and port.precision else None,
            "shape": port.shape.to_text() if port else None,
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
                "shape": p.attrs.get("shape"),
            }
            for p in model.parameters
        ],
        "outputs": outputs,
        "opsets": dict(sorted(opsets.items())),
        "ops": dict(sorted(histogram.items())),
        "layers_without_kernel": missing,
        "bin_file": model.bin_path,
        "bin_size": model.bin_size,
        "rt_info": model.rt_info,
    }
