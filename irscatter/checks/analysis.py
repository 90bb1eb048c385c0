"""The one pass over a graph, shared by compiling a model and by `validate`.

It wires the edges, finds what the Results need, looks for unconnected inputs and cycles, puts
the layers in dependency order, resolves every layer to its op and infers every output, and
compares each output with the port's declared precision and dims. Every problem is a `Finding`.

Compiling (`collect=False`) looks only at what the Results need, and stops at the first error,
raising it with the file, layer and port. Declared dims and precisions that contradict
inference are kept as findings and not raised, because OpenVINO recomputes them too.
`validate` (`collect=True`) looks at every layer and records everything. A layer that fails
leaves its outputs unknown, and the layers downstream of it are skipped, so one defect gives one
finding. An op OpenVINO defines that irscatter cannot run, and a custom domain with no kernels,
are warnings there: the model may well be valid.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from irscatter.checks import strict as strict_probe
from irscatter.checks.infer import InferenceMemo, compare_declared
from irscatter.errors import IRError
from irscatter.findings import Finding
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer, Model
from irscatter.ir.topology import Source, Wiring, wire
from irscatter.ops import registry
from irscatter.ops.base import Op, TensorInfo
from irscatter.ops.common import strict
from irscatter.ops.state.assign import Assign
from irscatter.ops.state.core import VariableInfo
from irscatter.ops.state.read_value import ReadValue

WARNED_UNRESOLVED = ("no-kernel", "custom-domain")
UNRESOLVED = (*WARNED_UNRESOLVED, "not-in-opset", "unknown-opset")  # a layer that names no op irscatter runs


@dataclass
class Analysis:
    wiring: Wiring
    order: list[int] = field(default_factory=list)  # producers before consumers
    ops: dict[int, Op] = field(default_factory=dict)
    infos: dict[Source, TensorInfo] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    variables: dict[str, VariableInfo] = field(default_factory=dict)  # the model state, by variable_id


class _Pass:
    def __init__(self, model: Model, collect: bool, loaded_badly: Iterable[int | str], strict: bool = False) -> None:
        self.model = model
        self.strict = strict  # validate --strict: the active strict collector hears this pass's kernels
        self.file = model.source
        self.collect = collect
        self.loaded_badly = set(loaded_badly)
        self.findings: list[Finding] = []

    def report(self, finding: Finding, error: IRError | None = None) -> None:
        """Record a finding, or (compiling) raise it if it is an error."""
        if finding.severity == "error" and not self.collect:
            if error is not None:
                raise error.add_context(file=self.file, layer=finding.layer, line=finding.line) from None
            raise finding.to_error(self.file)
        self.findings.append(finding)

    def run(self) -> Analysis:
        if self.strict:
            return self._run()
        with strict.collecting(None):  # folding while compiling (a body, too) reports nothing
            return self._run()

    def _run(self) -> Analysis:
        model = self.model
        wiring = wire(model)
        for finding in wiring.findings:
            self.report(finding)
        if not model.results and not _sink_kinds(model.layers):
            self.report(Finding("error", "no-result", "the model has neither a Result nor a sink (Assign) layer, "
                                "so nothing is computed"))
        by_id, sources = wiring.by_id, wiring.sources
        needed = self._needed(wiring)
        if self.collect:
            considered = list(by_id)
        else:  # Parameters nothing needs are still model inputs: their feeds are checked
            considered = [lid for lid in by_id if lid in needed or by_id[lid].type == "Parameter"]
        for lid in considered:
            layer = by_id[lid]
            for i, src in enumerate(sources[lid]):
                if src is None:
                    self.report(Finding("error", "unconnected-input",
                                        f"input port {layer.inputs[i].id} has no incoming edge",
                                        layer.ref, f"input {i}", layer.line))
        order = self._order(wiring, considered)
        if self.collect:
            self._unused(wiring, needed)
        ops = self._resolve(wiring, considered if self.collect else order)
        infos = self._infer(wiring, ops, order)
        variables = self._variables(wiring, ops, infos, order)
        return Analysis(wiring, order, ops, infos, self.findings, variables)

    @staticmethod
    def _needed(wiring: Wiring) -> set[int]:
        """What the Results and the sinks (Assign) depend on."""
        needed: set[int] = set()
        sinks = _sink_kinds(wiring.by_id.values())
        todo = [lid for lid, layer in wiring.by_id.items()
                if layer.type == "Result" or (sinks and (layer.type, layer.version) in sinks)]
        sources = wiring.sources
        while todo:
            lid = todo.pop()
            if lid not in needed:
                needed.add(lid)
                for src in sources[lid]:  # (a loop, not a generator: large graphs go faster)
                    if src is not None:
                        todo.append(src[0])
        return needed

    def _order(self, wiring: Wiring, considered: list[int]) -> list[int]:
        """Kahn's order over `considered` (XML order among equals); cycles are reported."""
        members = set(considered)
        consumers: dict[int, list[int]] = {lid: [] for lid in considered}
        pending = {}
        sources = wiring.sources
        for lid in considered:
            count = 0  # (one loop a layer, without a list of its producers: large graphs go faster)
            for src in sources[lid]:
                if src is not None and src[0] in members:
                    consumers[src[0]].append(lid)
                    count += 1
            pending[lid] = count
        ready = deque([lid for lid in considered if pending[lid] == 0])
        order: list[int] = []
        while ready:
            lid = ready.popleft()
            order.append(lid)
            for c in consumers[lid]:
                pending[c] -= 1
                if pending[c] == 0:
                    ready.append(c)
        if len(order) < len(considered):  # what is left lies on a cycle or downstream of one
            left = [lid for lid in considered if pending[lid] > 0]
            for component in _strongly_connected(left, {lid: [c for c in consumers[lid] if pending[c] > 0]
                                                         for lid in left}):
                if len(component) > 1:
                    first = wiring.by_id[min(component)]
                    names = ", ".join(str(i) for i in sorted(component))
                    self.report(Finding("error", "cycle", f"the graph has a cycle through layers {names}",
                                        first.ref, line=first.line))
        return order

    def _unused(self, wiring: Wiring, needed: set[int]) -> None:
        """Layers no Result depends on: OpenVINO drops them; they are probably a mistake."""
        for lid, layer in wiring.by_id.items():
            if lid not in needed:
                what = "no Result depends on this Parameter" if layer.type == "Parameter" else \
                    "no Result depends on this layer, so it is never computed"
                self.report(Finding("warning", "unreachable", what, layer.ref, line=layer.line))

    def _resolve(self, wiring: Wiring, layers: list[int]) -> dict[int, Op]:
        ops: dict[int, Op] = {}
        unresolved: list[tuple[Layer, IRError]] = []  # compiling: every layer without an op, at once
        for lid in layers:
            layer = wiring.by_id[lid]
            try:
                ops[lid] = registry.instantiate(layer)
                if self.collect and ops[lid].domain == "opset":
                    draft = registry.resolve(layer.type, layer.version).draft
                    if draft:
                        self.report(Finding("warning", "draft-op", draft, layer.ref, line=layer.line))
            except IRError as e:
                if lid in self.loaded_badly:
                    continue  # the loader's finding already names what is wrong with it
                if not self.collect and e.label in UNRESOLVED:
                    unresolved.append((layer, e))
                    continue
                if self.collect and layer.bodies:
                    inner = self._inside_bodies(layer)
                    if inner:  # every finding inside, rather than the first one that stopped the layer
                        self.findings += inner
                        continue
                if self.collect and e.label in WARNED_UNRESOLVED:
                    self.report(Finding("warning", e.label, f"{e.message}, so this layer and what depends on it "
                                        f"are not checked", layer.ref, line=layer.line))
                else:
                    self.report(Finding("error", e.label or "invalid", e.message, layer.ref, e.port, layer.line), e)
        if unresolved:
            self._refuse_unresolved(unresolved)
        return ops

    def _refuse_unresolved(self, unresolved: list[tuple[Layer, IRError]]) -> None:
        """One error for every layer that names no op irscatter runs: the first in full, the
        others listed after it, so one run tells everything that is missing."""
        layer, first = unresolved[0]
        if len(unresolved) > 1:
            others = ", ".join(f"{other.ref} ({e.label})" for other, e in unresolved[1:6])
            more = f" and {len(unresolved) - 6} more" if len(unresolved) > 6 else ""
            count = len(unresolved) - 1
            first = type(first)(f"{first.message}; {count} more layer{'s name' if count > 1 else ' names'} "
                                f"no op irscatter runs: {others}{more}", label=first.label)
        raise first.add_context(file=self.file, layer=layer.ref, line=layer.line)

    def _inside_bodies(self, layer) -> list[Finding]:
        """The findings of a layer's bodies, each checked as a graph of its own (with its
        Parameters' shapes as written), retold for the outer layer."""
        found = []
        for name, body in layer.bodies.items():
            for f in _Pass(body.as_model(name=name), True, ()).run().findings:
                where = f"{f.layer}" + (f" {f.port}" if f.port else "") if f.layer else ""
                line = f" (line {f.line})" if f.line is not None and f.layer else ""
                found.append(Finding(f.severity, f.code, f"in <{name}>, {where}{line}: {f.message}" if where
                                     else f"in <{name}>: {f.message}", layer.ref, line=layer.line))
        return found

    def _infer(self, wiring: Wiring, ops: dict[int, Op], order: list[int]) -> dict[Source, TensorInfo]:
        infos: dict[Source, TensorInfo] = {}
        collector = strict.collector() if self.strict else None
        memo = InferenceMemo(share=collector is None)  # strict mode hears every layer's own inference
        by_id, sources, findings = wiring.by_id, wiring.sources, self.findings
        for lid in order:
            layer, op = by_id[lid], ops.get(lid)
            try:
                args = [infos[s] for s in sources[lid]]  # type: ignore[index]
            except KeyError:  # an input without a producer, or one whose producer failed
                continue  # already reported upstream: its outputs stay unknown
            if op is None:
                continue
            if layer.type == "Const" and layer.const_data is None:
                if not self.collect:  # a body compiled for a model read with its defects collected
                    self.report(Finding("error", "const-data", "the Const has no data: its attributes or weights "
                                        "were refused when the model was read", layer.ref, line=layer.line))
                continue  # its data was reported by the loader
            if collector is not None:
                collector.layer = layer
            try:
                outs = memo.infer(op, layer, args)
            except IRError as e:
                self.report(Finding("error", e.label or "inference", e.message, layer.ref, e.port, layer.line), e)
                continue
            if collector is not None:
                strict_probe.probe(collector, op, layer, args,
                                   [wiring.by_id[s[0]] for s in wiring.sources[lid]], outs)  # type: ignore[index]
            for pos, info in enumerate(outs):
                infos[(lid, pos)] = info
                if found := compare_declared(layer, pos, info):
                    findings += found
        return infos


    def _variables(self, wiring: Wiring, ops: dict[int, Op], infos: dict[Source, TensorInfo],
                   order: list[int]) -> dict[str, VariableInfo]:
        """Pair each Assign with the ReadValue of its variable and check what it writes against
        what the variable holds."""
        variables: dict[str, VariableInfo] = {}
        assigned: set[str] = set()
        order = [lid for lid in order if isinstance(ops.get(lid), (ReadValue, Assign))]  # (most models have none)
        for lid in order:
            op, layer = ops.get(lid), wiring.by_id[lid]
            if isinstance(op, ReadValue) and (lid, 0) in infos:
                init = infos.get(wiring.sources[lid][0]) if wiring.sources[lid] else None  # type: ignore[arg-type]
                info = op.variable(init)
                if info.variable_id in variables:
                    self._read_again(variables[info.variable_id], info, layer)
                variables.setdefault(info.variable_id, info)
        for lid in order:
            op, layer = ops.get(lid), wiring.by_id[lid]
            if not isinstance(op, Assign) or wiring.sources[lid][0] not in infos:
                continue
            name = op.attrs.variable_id
            declared = variables.get(name)
            if declared is None:
                self.report(Finding("error", "unknown-variable", f'no ReadValue declares variable "{name}"',
                                    layer.ref, line=layer.line))
                continue
            if name in assigned:  # which value would the variable keep? Their order is arbitrary
                self.report(Finding("error", "variable-pair", f'variable "{name}" is assigned by more than one '
                                    f"Assign", layer.ref, line=layer.line))
            assigned.add(name)
            value = infos[wiring.sources[lid][0]]  # type: ignore[index]
            if ElementType.dynamic not in (declared.etype, value.etype) and value.etype is not declared.etype:
                self.report(Finding("error", "variable-type", f'assigns {value.etype} to variable "{name}" of '
                                    f"type {declared.etype}", layer.ref, "input 0", layer.line))
            elif not declared.shape.relaxes(value.shape):
                self.report(Finding("error", "variable-shape", f'assigns shape {value.shape} to variable "{name}" '
                                    f"of shape {declared.shape}", layer.ref, "input 0", layer.line))
        return variables


    def _read_again(self, first: VariableInfo, again: VariableInfo, layer) -> None:
        """A second ReadValue of a variable: it must declare what the first does, for a variable
        holds one value, of one type and shape (otherwise a later step would read a value of the
        other's type)."""
        name = first.variable_id
        if again.etype is not first.etype:
            self.report(Finding("error", "variable-type", f'reads variable "{name}" as {again.etype}, which an '
                                "earlier ReadValue reads as " + str(first.etype), layer.ref, line=layer.line))
        elif again.shape != first.shape:
            self.report(Finding("error", "variable-shape", f'reads variable "{name}" with shape {again.shape}, '
                                f"which an earlier ReadValue reads with shape {first.shape}", layer.ref,
                                line=layer.line))
        else:
            self.report(Finding("warning", "variable-pair", f'variable "{name}" is read by more than one '
                                "ReadValue", layer.ref, line=layer.line))


def _names_sink(type_name: str, version: str) -> bool:
    found = registry.resolve(type_name, version)
    return found.cls is not None and found.cls.sink


def _sink_kinds(layers: Iterable[Layer]) -> set[tuple[str, str]]:
    """The (type, version) pairs of `layers` that name a sink, each pair asked once (a model
    repeats a few pairs over thousands of layers)."""
    return {kind for kind in {(layer.type, layer.version) for layer in layers} if _names_sink(*kind)}


def analyze(model: Model, *, collect: bool = False, loaded_badly: Iterable[int | str] = (),
            strict: bool = False) -> Analysis:
    """The pass; see the module doc. `loaded_badly`: layers the loader already reported.
    `strict`: the kernels this pass runs report into the strict collector the caller has made
    active (`validate --strict`, see checks/strict.py); otherwise strict mode is off in here."""
    return _Pass(model, collect, loaded_badly, strict).run()


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
