"""Conformance checking: every finding about an IR in one pass.

`validate()` loads what can be loaded (a defect in one port, layer, edge or constant is
recorded and the element left out), then checks the wiring, resolves every layer to its
op (type/opset, attributes, input and output counts), looks for unconnected inputs, cycles
and layers no Result depends on, and runs shape and type inference over every layer whose
inputs are known, comparing the result with each port's declared precision and dims. A
layer whose check fails contributes one finding and its outputs become unknown, so one
defect does not cascade into findings downstream.

Codes are stable: the label of the rule that failed (`same-element-type`, `C19`,
`declared-shape`, `dangling-edge`, ...). Severity `error` means OpenVINO would refuse the
model or irscatter cannot run it as written; `warning` means it can, but something is off
(a layer nothing uses, an op irscatter cannot check).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from irscatter.errors import FileAccessError, IRError
from irscatter.ir.graph import Model
from irscatter.ir.loader import read_model_collecting
from irscatter.findings import Finding
from irscatter.ir.topology import Source, Wiring, wire
from irscatter.ops import registry
from irscatter.ops.base import Op, TensorInfo
from irscatter.checks.infer import compare_declared, infer_layer


@dataclass
class Report:
    """The findings about one model file, in the order they were found."""

    file: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "ok": self.ok,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [finding_record(f) for f in self.findings],
        }


def finding_line(f: Finding, file: str) -> str:
    """One finding as one line, in the style of irscatter's error messages."""
    where = file + (f":{f.line}" if f.line is not None else "") + (f":{f.column}" if f.column is not None else "")
    subject = (f"{f.layer}" + (f" {f.port}" if f.port else "") + ": ") if f.layer else (f"{f.port}: " if f.port else "")
    return f"{where}: {f.severity}: {subject}{f.message} [{f.code}]"


def finding_record(f: Finding) -> dict[str, Any]:
    layer = None
    if f.layer is not None:
        layer = {"id": f.layer.id, "name": f.layer.name, "type": f.layer.type, "version": f.layer.version}
    return {"severity": f.severity, "code": f.code, "message": f.message, "layer": layer, "port": f.port,
            "line": f.line, "column": f.column}


def from_error(e: IRError, severity: str = "error", default_code: str = "invalid") -> Finding:
    return Finding(severity, e.label or default_code, e.message, e.layer, e.port, e.line, e.column)  # type: ignore[arg-type]


def validate(model: Model | str | os.PathLike, bin_path: str | os.PathLike | None = None) -> Report:
    """Every finding about `model` (a loaded Model, or the path of its `.xml`)."""
    if isinstance(model, Model):
        return Report(model.source, check_model(model))
    try:
        loaded, problems = read_model_collecting(model, bin_path)
    except FileAccessError:
        raise  # nothing to judge: the file itself could not be read
    except IRError as e:  # the document as a whole is not an IR: one finding says why
        return Report(str(model), [from_error(e, default_code=e.kind)])
    loaded_badly = {p.layer.id for p in problems if p.layer is not None}
    return Report(loaded.source, [from_error(p, default_code="load") for p in problems]
                  + check_model(loaded, loaded_badly))


# An op OpenVINO knows and irscatter cannot run yet, or a custom domain with no kernels here:
# the model may well be valid, so these are warnings (run refuses them).
_WARNED_UNRESOLVED = ("no-kernel", "custom-domain")


# --- the checks --------------------------------------------------------------------------------


def check_model(model: Model, loaded_badly: set[int] | None = None) -> list[Finding]:
    """The checks after loading; layers in `loaded_badly` were already reported."""
    findings = []
    if not model.results:
        findings.append(Finding("error", "no-result", "the model has no Result layer, so nothing is computed"))
    wiring = wire(model)
    findings += wiring.findings
    ops = _resolve_all(wiring, findings, loaded_badly or set())
    findings += _unconnected_inputs(wiring)
    consumers = _consumers(wiring)
    cyclic = _cycles(wiring, consumers, findings)
    findings += _unused_layers(wiring, model)
    findings += _inference(wiring, ops, _topological(wiring, consumers, cyclic))
    return findings


def _consumers(wiring: Wiring) -> dict[int, list[int]]:
    """For each layer, the layers that read one of its outputs."""
    consumers: dict[int, list[int]] = {lid: [] for lid in wiring.by_id}
    for lid, srcs in wiring.sources.items():
        for src in srcs:
            if src is not None:
                consumers[src[0]].append(lid)
    return consumers


def _resolve_all(wiring: Wiring, findings: list[Finding], loaded_badly: set[int]) -> dict[int, Op]:
    ops: dict[int, Op] = {}
    for lid, layer in wiring.by_id.items():
        try:
            ops[lid] = registry.instantiate(layer)
        except IRError as e:
            if lid in loaded_badly:
                continue  # the loader's finding already names what is wrong with it
            if e.label in _WARNED_UNRESOLVED:
                findings.append(Finding("warning", e.label, f"{e.message}, so this layer and what depends on it "
                                        f"are not checked", layer.ref, line=layer.line))
            else:
                findings.append(Finding("error", e.label or "invalid", e.message, layer.ref, e.port, layer.line))
    return ops


def _unconnected_inputs(wiring: Wiring) -> list[Finding]:
    found = []
    for lid, srcs in wiring.sources.items():
        layer = wiring.by_id[lid]
        for i, src in enumerate(srcs):
            if src is None:
                found.append(Finding("error", "unconnected-input", f"input port {layer.inputs[i].id} has no incoming edge",
                                     layer.ref, f"input {i}", layer.line))
    return found


def _cycles(wiring: Wiring, consumers: dict[int, list[int]], findings: list[Finding]) -> set[int]:
    """Layers on a cycle (one finding per cycle); self-edges were already reported by `wire`."""
    on_cycle: set[int] = set()
    for component in _strongly_connected(wiring.by_id, consumers):
        if len(component) > 1:
            on_cycle.update(component)
            first = wiring.by_id[min(component)]
            names = ", ".join(str(i) for i in sorted(component))
            findings.append(Finding("error", "cycle", f"the graph has a cycle through layers {names}", first.ref,
                                    line=first.line))
    return on_cycle


def _strongly_connected(nodes: Iterable[int], edges: dict[int, list[int]]) -> list[list[int]]:
    """Tarjan's algorithm, iterative (deep chains must not hit Python's recursion limit)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    components: list[list[int]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, i = work[-1]
            if i < len(edges[node]):
                work[-1] = (node, i + 1)
                nxt = edges[node][i]
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _unused_layers(wiring: Wiring, model: Model) -> list[Finding]:
    """Layers no Result depends on: OpenVINO drops them; they are probably a mistake."""
    needed: set[int] = set()
    todo = [r.id for r in model.results if r.id in wiring.by_id]
    while todo:
        lid = todo.pop()
        if lid in needed:
            continue
        needed.add(lid)
        todo.extend(src[0] for src in wiring.sources[lid] if src is not None)
    found = []
    for lid, layer in wiring.by_id.items():
        if lid not in needed:
            what = "no Result depends on this Parameter" if layer.type == "Parameter" else \
                "no Result depends on this layer, so it is never computed"
            found.append(Finding("warning", "unreachable", what, layer.ref, line=layer.line))
    return found


def _inference(wiring: Wiring, ops: dict[int, Op], order: list[int]) -> list[Finding]:
    """Infer every layer whose inputs are known, in dependency order."""
    found: list[Finding] = []
    infos: dict[Source, TensorInfo] = {}
    for lid in order:
        layer, op = wiring.by_id[lid], ops.get(lid)
        srcs = wiring.sources[lid]
        if op is None or any(s is None or s not in infos for s in srcs):
            continue  # already reported upstream: its outputs stay unknown
        if layer.type == "Const" and layer._const is None:
            continue  # its data was reported by the loader
        try:
            outs = infer_layer(op, [infos[s] for s in srcs])  # type: ignore[index]
        except IRError as e:
            found.append(Finding("error", e.label or "inference", e.message, layer.ref, e.port, layer.line))
            continue
        for pos, info in enumerate(outs):
            infos[(lid, pos)] = info
            found += compare_declared(layer, pos, info)
    return found


def _topological(wiring: Wiring, consumers: dict[int, list[int]], skip: set[int]) -> list[int]:
    """Kahn's order over the layers not on a cycle (XML order among equals)."""
    pending = {lid: sum(1 for s in srcs if s is not None) for lid, srcs in wiring.sources.items() if lid not in skip}
    ready = deque(lid for lid, n in pending.items() if n == 0)
    order: list[int] = []
    while ready:
        lid = ready.popleft()
        order.append(lid)
        for c in consumers[lid]:
            if c in pending:
                pending[c] -= 1
                if pending[c] == 0:
                    ready.append(c)
    return order
