"""How the layers of a graph connect: edges resolved to port positions, and execution order.

`wire()` never raises: every structural problem becomes a `Finding`, so that `validate` can
list them all while compiling stops at the first error. Order, cycles and reachability are the
graph pass's (`irscatter.checks.analysis`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irscatter.findings import Finding
from irscatter.ir.graph import Edge, Graph, Layer

Source = tuple[int, int]  # (producer layer id, producer output position)


@dataclass
class Wiring:
    by_id: dict[int, Layer]
    sources: dict[int, list[Source | None]]  # per layer: the producer of each input position
    findings: list[Finding] = field(default_factory=list)

    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]


def _edge_text(e: Edge) -> str:
    return f"edge {e.from_layer}:{e.from_port} -> {e.to_layer}:{e.to_port}"


def wire(graph: Graph) -> Wiring:
    by_id: dict[int, Layer] = {}
    findings: list[Finding] = []
    for layer in graph.layers:
        if layer.id in by_id:
            first = by_id[layer.id]
            findings.append(
                Finding("error", "duplicate-layer-id",
                        f'layer id {layer.id} is used again (first by "{first.name}" at line {first.line})',
                        layer.ref, line=layer.line)
            )
            continue
        by_id[layer.id] = layer
    sources: dict[int, list[Source | None]] = {lid: [None] * len(layer.inputs) for lid, layer in by_id.items()}
    seen_edges: set[tuple[int, int, int, int]] = set()
    for e in graph.edges:
        key = (e.from_layer, e.from_port, e.to_layer, e.to_port)
        if key in seen_edges:
            findings.append(Finding("error", "duplicate-edge", f"{_edge_text(e)} is listed twice"))
            continue
        seen_edges.add(key)
        src, dst = by_id.get(e.from_layer), by_id.get(e.to_layer)
        if src is None or dst is None:
            missing = e.from_layer if src is None else e.to_layer
            findings.append(Finding("error", "dangling-edge", f"{_edge_text(e)} names layer {missing}, which does not exist"))
            continue
        out_pos = src.output_position(e.from_port)
        if out_pos is None:
            findings.append(Finding("error", "dangling-edge", f"{_edge_text(e)}: the layer has no output port {e.from_port}", src.ref, line=src.line))
            continue
        in_pos = dst.input_position(e.to_port)
        if in_pos is None:
            findings.append(Finding("error", "dangling-edge", f"{_edge_text(e)}: the layer has no input port {e.to_port}", dst.ref, line=dst.line))
            continue
        if e.from_layer == e.to_layer:
            findings.append(Finding("error", "cycle", f"{_edge_text(e)} connects the layer to itself", dst.ref, line=dst.line))
            continue
        if sources[dst.id][in_pos] is not None:
            findings.append(
                Finding("error", "duplicate-input", f"input port {e.to_port} has more than one incoming edge", dst.ref,
                        port=f"input {in_pos}", line=dst.line)
            )
            continue
        sources[dst.id][in_pos] = (src.id, out_pos)
    return Wiring(by_id, sources, findings)
