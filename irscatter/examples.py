"""Spec examples as unit tests: find every example `<layer>` in a document, run it and
compare what it computes with the values the document writes beside it.

A document is any text (`.rst`, `.md`, `.xml`, `.txt`); examples are `<layer>` elements
in code blocks of any language, or bare. Real spec pages are not valid XML, so each
snippet is repaired first, and every repair is reported: literal `...` inside tags,
attributes written on `<layer>` instead of `<data>`, unquoted attribute values, a doubled
`>`, a missing id, name or version (the version comes from the document's "Versioned
name", else the newest opset; an internal op's page, whose versioned name has no number, gives
the custom domain that registers the type), and an output port more than the op has.

Values are read from the comments of each port (inside the `<port>` element or right after
it): `<!-- values: [...] -->`, `data:`/`output:`-style labels, C-style `{...}` lists with
`f` suffixes, lists spread over several comments (stacked as rows), numpy-style lists
without commas, `axis = 1`, and trailing words ("silently clamped to 0"). The example is
wrapped into a graph with a Const per input that has values, a Parameter (declared dims)
per input that has none, and a Result per output. If every input has values, the graph
runs and each output is compared with its documented values (flattened when the document
writes them flat); otherwise the example is shape-checked only: the inferred output dims
must match the declared ones. Where listed values contradict the declared dims, the values
win and the repair says so.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from irscatter import limits
from irscatter.api import compile_model, parse_model
from irscatter.errors import FileAccessError, IRError, SecurityError, elide
from irscatter.ir import opsets
from irscatter.ir.element_types import ElementType
from irscatter.ir.files import require_regular
from irscatter.ir.loader import parse_xml
from irscatter.ir.snippets import find_snippets, repair
from irscatter.ops import registry

# "**Versioned name**: *Gather-8*": the run of markup and spaces before the name is taken whole,
# never given back (its parts, written as alternatives, made the search cubic in its length).
_VERSIONED = re.compile(r"Versioned name\W*([A-Za-z][A-Za-z0-9]*)-(\d+)")
# "**Versioned name**: *RMS*": an internal op's page, whose op is in no numbered opset
_UNNUMBERED = re.compile(r"Versioned name\W*[A-Za-z][A-Za-z0-9]*\*")


@dataclass
class Example:
    """One example and its outcome: passed, failed, not runnable, or shape-checked."""

    file: str
    index: int
    line: int
    type: str = "?"
    status: str = "not runnable"
    reason: str = ""
    repairs: list[str] = field(default_factory=list)
    computed: dict[str, Any] = field(default_factory=dict)
    documented: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "shape-checked")

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "index": self.index, "line": self.line, "type": self.type, "status": self.status,
                "reason": self.reason, "repairs": self.repairs,
                "computed": {k: np.asarray(v).tolist() for k, v in self.computed.items()},
                "documented": {k: np.asarray(v).tolist() for k, v in self.documented.items()}}


# --- values in comments ----------------------------------------------------------------------------


def _balanced_groups(text: str) -> list[str]:
    groups, depth, start = [], 0, -1
    for i, ch in enumerate(text):
        if ch == "[":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "]" and depth > 0:
            depth -= 1
            if depth == 0:
                groups.append(text[start: i + 1])
    return groups


def _literal(group: str) -> Any:
    text = re.sub(r"(?<=\d)[fF]\b", "", group)  # 1.0f
    text = re.sub(r"(?<=[\d.\]])\s+(?=[-\d\[])", ", ", text.strip())  # numpy style: [ 1  2  3]
    text = re.sub(r"\[\s*,", "[", text)
    return ast.literal_eval(text)


def comment_values(comments: list[str]) -> Any:
    """The values written in a port's comments, or None when they hold none."""
    texts = [c for c in comments if "element ids" not in c]  # StridedSlice's per-dimension notes
    joined = " ".join(texts).replace("{", "[").replace("}", "]")
    groups = [g for g in _balanced_groups(joined) if "..." not in g]
    if not groups:
        # "axis = 1" and "axis: 1" give a value; "10 tokens, K=64" describes a shape and gives none
        single = joined.count("=") + joined.count(":") == 1 and "," not in joined
        m = re.search(r"[=:]\s*(-?\d+(?:\.\d+)?)\s*$", joined.strip()) if single else None
        groups = [m.group(1)] if m else []
        if not groups:
            return None
    try:
        values = [_literal(g) for g in groups]
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):  # not a Python literal we can read
        return None
    return values[0] if len(values) == 1 else values  # rows written one comment each


def _port_comments(port: etree._Element) -> list[str]:
    """Comments inside a port and those that follow it before the next element."""
    texts = [c.text or "" for c in port.iter(etree.Comment)]
    sib = port.getnext()
    while sib is not None and sib.tag is etree.Comment:
        texts.append(sib.text or "")
        sib = sib.getnext()
    return texts


_INTEGER_ROLES = re.compile(r"\b(ind(ex|ices)|axis|axes|start|stop|step|begin|end|stride|shape|batch)", re.I)


@dataclass
class _Port:
    id: int
    etype: ElementType | None
    dims: list[int]
    values: Any
    role: str = ""  # the comment that names the port ("indices", "axis"), if any
    precision_given: bool = True
    unread: str = ""  # a comment that looks like values but could not be read as any

    def guessed_type(self) -> ElementType:
        """A port without a precision: integer for index-like roles or integer values, else f32."""
        if self.etype is not None:
            return self.etype
        if self.values is not None:
            return ElementType.i64 if np.asarray(self.values).dtype.kind in "iub" else ElementType.f32
        return ElementType.i64 if _INTEGER_ROLES.search(self.role) else ElementType.f32


def _ports(group: etree._Element | None) -> list[_Port]:
    if group is None:
        return []
    ports = []
    for p in group.iterchildren("port"):
        precision = p.get("precision")
        etype = ElementType.from_precision(precision) if precision else None
        dims = [int((d.text or "").strip()) for d in p.iterchildren("dim")]
        comments = _port_comments(p)
        role = " ".join(c for c in comments if not re.search(r"[\d\[{]", c))
        values = comment_values(comments)
        unread = "" if values is not None else " ".join(c.strip() for c in comments if re.search(r"[\d\[{]", c))
        ports.append(_Port(int(p.get("id", "0")), etype, dims, values, role, etype is not None, unread))
    return ports


# --- running -------------------------------------------------------------------------------------------


def _drop_ragged_values(inputs: list[_Port], repairs: list[str]) -> None:
    """Values a page lists as rows of different lengths make no tensor: the port is read as an
    input of its declared shape instead (the example is then checked for shape only)."""
    for port in inputs:
        if port.values is None:
            continue
        try:
            np.asarray(port.values, dtype=np.float64)
        except (ValueError, TypeError):
            first = port.values[0] if isinstance(port.values, list) and port.values else None
            if isinstance(first, list) and len(first) == int(np.prod(port.dims)):
                # "[1, 2, 3] will be promoted to [1, 1, 2, 3]": the value, then what becomes of it
                repairs.append(f"input port {port.id}: of the listed values {elide(repr(port.values))}, read the "
                               f"first, which fits the declared dims {port.dims}")
                port.values = first
                continue
            repairs.append(f"input port {port.id}: its listed values {elide(repr(port.values))} are not a "
                           f"rectangular array; read without values")
            port.values = None


def _array(port: _Port, repairs: list[str], what: str) -> np.ndarray | None:
    """The port's listed values as an array of its (guessed) type; None, with the port read
    without values, when they make no array of that type (numbers past its range)."""
    try:
        etype = port.guessed_type()
        array = np.asarray(port.values).astype(etype.dtype)
    except (ValueError, TypeError, OverflowError) as e:
        repairs.append(f"{what}: its listed values {elide(repr(port.values))} make no array of its type ({e}); "
                       "read without values")
        port.values = None
        return None
    if list(array.shape) != port.dims:
        if array.size == int(np.prod(port.dims)):
            array = array.reshape(port.dims)
        else:
            repairs.append(f"{what}: declared dims {port.dims} contradict the {array.size} listed values; "
                           f"used shape {list(array.shape)}")
    return array


def _graph_xml(layer_xml: str, inputs: list[_Port], arrays: list[np.ndarray | None],
               outputs: list[_Port]) -> tuple[str, bytes]:
    """One Const (values) or Parameter (no values) per input, the example layer, a Result per output."""
    layers, edges, weights = [], [], bytearray()
    for i, (port, array) in enumerate(zip(inputs, arrays)):
        if array is not None:
            et = ElementType.from_dtype(array.dtype)
            dims = "".join(f"<dim>{d}</dim>" for d in array.shape)
            layers.append(f'<layer id="{1000 + i}" name="in{i}" type="Const" version="opset1">'
                          f'<data element_type="{et}" shape="{",".join(map(str, array.shape))}" offset="{len(weights)}" '
                          f'size="{array.nbytes}"/><output><port id="0" precision="{et.precision}">{dims}</port></output>'
                          f"</layer>")
            weights += np.ascontiguousarray(array).tobytes()
        else:
            et = port.guessed_type()
            dims = "".join(f"<dim>{d}</dim>" for d in port.dims)
            layers.append(f'<layer id="{1000 + i}" name="in{i}" type="Parameter" version="opset1">'
                          f'<data shape="{",".join(map(str, port.dims))}" element_type="{et}"/>'
                          f'<output><port id="0" precision="{et.precision}">{dims}</port></output></layer>')
        edges.append(f'<edge from-layer="{1000 + i}" from-port="0" to-layer="0" to-port="{port.id}"/>')
    layers.append(layer_xml)
    for k, port in enumerate(outputs):
        layers.append(f'<layer id="{2000 + k}" name="out{port.id}" type="Result" version="opset1">'
                      f'<input><port id="0"/></input></layer>')
        edges.append(f'<edge from-layer="0" from-port="{port.id}" to-layer="{2000 + k}" to-port="0"/>')
    xml = f'<net name="example" version="11"><layers>{"".join(layers)}</layers><edges>{"".join(edges)}</edges></net>'
    return xml, bytes(weights)


def _compile(file: str, layer_xml: str, inputs: list[_Port], arrays: list[np.ndarray | None],
             outputs: list[_Port]) -> Any:
    xml, weights = _graph_xml(layer_xml, inputs, arrays, outputs)
    return compile_model(parse_model(xml, weights, source=file))


_TYPE_GUESSES = (ElementType.boolean, ElementType.i64, ElementType.i32, ElementType.f32, ElementType.u1)


def _compile_guessing_types(file: str, layer_xml: str, inputs: list[_Port], arrays: list[np.ndarray | None],
                            outputs: list[_Port], repairs: list[str]) -> tuple[Any, list[np.ndarray | None]]:
    """Compile; when the op refuses the type guessed for an input port the example gave no
    precision (a `...-type` check naming that port), try the next guess. The repair is reported."""
    tried: dict[int, set[ElementType]] = {}
    while True:
        try:
            return _compile(file, layer_xml, inputs, arrays, outputs), arrays
        except IRError as e:
            named = re.fullmatch(r"input (\d+)", e.port or "")  # an input of the op ("input 1")
            position = int(named.group(1)) if named else -1
            if not (e.label or "").endswith("-type") or not 0 <= position < len(inputs):
                raise
            port = inputs[position]
            if port.precision_given:
                raise
            refused = port.guessed_type()
            tried.setdefault(position, set()).add(refused)
            untried = [t for t in _TYPE_GUESSES if t not in tried[position]]
            if not untried:
                raise
            port.etype = untried[0]
            repairs.append(f"input port {port.id} has no precision and the op refused {refused} "
                           f"[{e.label}]: read as {port.etype}")
            arrays = [_array(p, [], "") if p.values is not None else None for p in inputs]


def _retry_as_columns(file: str, layer_xml: str, inputs: list[_Port], arrays: list[np.ndarray | None],
                      outputs: list[_Port]) -> tuple[dict[str, np.ndarray], str] | None:
    """Examples that list index tuples as a flat list ([0, 2, -3] for [[0], [2], [-3]]) run
    once one 1-D input is read as a column; the repair is reported."""
    for i, array in enumerate(arrays):
        if array is None or array.ndim != 1 or not re.search(r"ind(ex|ices)", inputs[i].role, re.I):
            continue
        trial = list(arrays)
        trial[i] = column = array.reshape(-1, 1)
        try:
            results = _compile(file, layer_xml, inputs, trial, outputs).run({})
        except IRError:
            continue
        return results, (f"input port {inputs[i].id}: as declared ({list(array.shape)}) the layer cannot run; "
                         f"read as {list(column.shape)}")
    return None


def _matches(computed: np.ndarray, documented: Any) -> bool:
    """Whether the computed values are the documented ones; documented values that make no
    array of numbers (rows of different lengths, integers past float64) never match."""
    try:
        doc = np.asarray(documented, dtype=np.float64)
    except (ValueError, TypeError, OverflowError):
        return False
    got = np.asarray(computed, dtype=np.float64)
    if doc.size != got.size:
        return False
    return bool(np.allclose(got.reshape(-1), doc.reshape(-1), rtol=1e-5, atol=1e-6, equal_nan=True))


_TYPE = re.compile(r'<layer\b[^>]*?\btype\s*=\s*"([^"]+)"')


def _version_for(snippet: str, default_version: str, internal: bool = False) -> str:
    """The `version` a snippet without one is given: the document's opset, unless one custom
    domain registers the type and either the type is in no OpenVINO opset or the document is an
    internal op's page (`internal`: its versioned name has no number, as OpenVINO's internal
    Convolution, whose examples say type="Convolution"). The internal ops' pages leave the domain
    unsaid; OpenVINO writes `extension`, `ie_internal_opset` or `gpu_opset`."""
    m = _TYPE.search(snippet)
    if m is None or (not internal and opsets.lookup(m.group(1), default_version).version is not None):
        return default_version
    return registry.custom_domain_of(m.group(1)) or default_version


def _without_outputs(root: etree._Element, dropped: list[_Port]) -> etree._Element:
    """A copy of `root` without the output ports `dropped`."""
    root = copy.deepcopy(root)
    group = root.find("output")
    if group is None:
        return root  # (no outputs to drop)
    for element in list(group.iterchildren("port")):
        if int(element.get("id", "0")) in {p.id for p in dropped}:
            group.remove(element)
    return root


def _drop_surplus_outputs(file: str, root: etree._Element, inputs: list[_Port], outputs: list[_Port],
                          repairs: list[str]) -> tuple[etree._Element, list[_Port]]:
    """An example declaring one output more than its op has (AUGRUCell's page lists a sequence's
    Y beside Ho) drops one port, the last whose removal leaves the others declared as the op's
    outputs are inferred (dims and precisions); the repair is reported. Nothing is dropped when
    no port fits, or when more than one is surplus (each choice is a compilation): the arity
    error then says what is wrong."""
    op = registry.find(root.get("type", ""), root.get("version", ""))
    if op is None or op.variadic or len(outputs) != op.outputs + 1:
        return root, outputs
    for surplus in reversed(outputs):
        kept = [p for p in outputs if p is not surplus]
        trial = _without_outputs(root, [surplus])
        ports = [replace(p) for p in inputs]  # the type guesses of a trial are not kept
        try:
            with limits.using(tensor_elements=2**62, tensor_bytes=2**62):  # shapes only: nothing runs
                compiled, _ = _compile_guessing_types(file, etree.tostring(trial, encoding="unicode"), ports,
                                                      [None] * len(ports), kept, [])
        except IRError:
            continue
        if not any(f.code in ("declared-shape", "declared-precision") for f in compiled.findings):
            repairs.append(f"{op.type_name} has {op.outputs} output{'s' if op.outputs > 1 else ''}, the example "
                           f"declares {len(outputs)}: dropped output port {surplus.id} "
                           "(the ports kept are declared as the op's outputs are inferred)")
            return trial, kept
    return root, outputs


def run_example(file: str, index: int, line: int, snippet: str, default_version: str,
                internal: bool = False) -> Example:
    ex = Example(file, index, line)
    text, ex.repairs = repair(snippet, _version_for(snippet, default_version, internal))
    try:
        root = parse_xml(text.encode(), file)
    except IRError as e:
        ex.reason = f"the snippet does not parse even after repairs: {e.message}"
        return ex
    ex.type = root.get("type", "?")
    try:
        inputs, outputs = _ports(root.find("input")), _ports(root.find("output"))
    except ValueError as e:
        ex.reason = f"a port cannot be read: {e}"
        return ex
    op = registry.find(ex.type, root.get("version", ""))
    for i, port in enumerate(inputs):  # unnamed ports take the op's own input names as roles
        if not port.role and op is not None and i < len(op.inputs):
            port.role = op.inputs[min(i, len(op.inputs) - 1)]
    for group in ("input", "output"):  # the example layer keeps its ports but loses its comments
        node = root.find(group)
        if node is not None:
            for c in list(node.iter(etree.Comment)):
                parent = c.getparent()
                if parent is not None:  # (always: the comment is below `node`)
                    parent.remove(c)
    root.set("id", "0")
    root, outputs = _drop_surplus_outputs(file, root, inputs, outputs, ex.repairs)
    layer_xml = etree.tostring(root, encoding="unicode")
    _drop_ragged_values(inputs, ex.repairs)
    arrays = [_array(p, ex.repairs, f"input port {p.id}") if p.values is not None else None for p in inputs]
    all_values = all(p.values is not None for p in inputs)
    try:
        # Checking shapes only allocates nothing, and spec pages use 10^12-element dims.
        lifted = contextlib.nullcontext() if all_values else limits.using(tensor_elements=2**62, tensor_bytes=2**62)
        with lifted:
            compiled, arrays = _compile_guessing_types(file, layer_xml, inputs, arrays, outputs, ex.repairs)
        if not all_values:
            mismatched = [f for f in compiled.findings if f.code == "declared-shape"]
            ex.status = "failed" if mismatched else "shape-checked"
            ex.reason = mismatched[0].message if mismatched else _why_shape_only(inputs)
            return ex
        results = compiled.run({})
    except IRError as e:
        retried = _retry_as_columns(file, layer_xml, inputs, arrays, outputs) if all_values else None
        if retried is None:
            ex.reason = f"{e.message}" + (f" [{e.label}]" if e.label else "")
            return ex
        results, note = retried
        ex.repairs.append(note)
    failures = []
    for port, (name, value) in zip(outputs, results.items()):
        ex.computed[f"output port {port.id}"] = value
        if port.values is None:
            if port.dims and list(value.shape) != port.dims:
                failures.append(f"output port {port.id}: shape {list(value.shape)}, declared {port.dims}")
            continue
        ex.documented[f"output port {port.id}"] = port.values
        if not _matches(value, port.values):
            failures.append(f"output port {port.id}: computed {np.asarray(value).tolist()}, "
                            f"documented {port.values}")
    ex.status = "failed" if failures else "passed"
    ex.reason = "; ".join(failures)
    return ex


def _why_shape_only(inputs: list[_Port]) -> str:
    """Which inputs had no values, and for each whether the page gave none or gave a comment
    that could not be read as values (then the documented output was not checked: say so)."""
    unread = [f"input port {p.id} ({elide(p.unread, 60)})" for p in inputs if p.values is None and p.unread]
    silent = [f"input port {p.id}" for p in inputs if p.values is None and not p.unread]
    parts = []
    if unread:
        parts.append("value comments that could not be read: " + ", ".join(unread))
    if silent:
        parts.append("no values given for " + ", ".join(silent))
    return "; ".join(parts) + ": output dims checked only"


def summary_line(examples: list[Example]) -> str:
    passed = sum(e.status == "passed" for e in examples)
    failed = sum(e.status == "failed" for e in examples)
    shape_only = [e for e in examples if e.status == "shape-checked"]
    unread = sum("could not be read" in e.reason for e in shape_only)
    not_runnable = sum(e.status == "not runnable" for e in examples)
    return (f"{passed} passed, {len(shape_only)} checked for shape only ({unread} of them with value comments "
            f"that could not be read), {failed} failed, {not_runnable} not runnable")


def example_line(e: Example) -> str:
    head = f"{e.file}:{e.line}: example {e.index} ({e.type}): {e.status}"
    return head + (f": {e.reason}" if e.reason else "")


def run_document(path: str | Path) -> list[Example]:
    """Every example of one document, in order."""
    path = Path(path)
    # a document is read whole: a device (/dev/zero) or a pipe has no end to read to, and a
    # regular file is held to the size of the largest model document irscatter reads
    require_regular(path, "document", "a document is read whole")
    try:
        size, most = path.stat().st_size, limits.current().xml_bytes
        if size > most:
            raise SecurityError(f"the document has {size} bytes, over the limit of {most} (irscatter.limits: "
                                "xml_bytes)", file=str(path), label="xml-size")
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise FileAccessError("document not found", file=str(path)) from None
    except OSError as e:
        raise FileAccessError(f"cannot read document: {e.strerror}", file=str(path)) from None
    m = _VERSIONED.search(text)
    default_version = opsets.opset_holding(m.group(1), int(m.group(2))) if m else opsets.newest_complete_opset()
    internal = m is None and _UNNUMBERED.search(text) is not None
    return [run_example(str(path), i + 1, line, snippet, default_version, internal)
            for i, (line, snippet) in enumerate(find_snippets(text))]
