"""From XML elements to the graph: the checks and constructors the two readers share.

The tree reader (`irscatter.ir.loader`) hands these lxml elements; the event reader
(`irscatter.ir.events`) hands them the subtrees it keeps whole (`rt_info`, port maps, back
edges) as elements of its own with the same small interface (`tag`, `get`, `attrib`,
`iterchildren`, `sourceline`), and builds ports and layers through the same
constructors, so both readers make the same graph of the same document.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, Protocol, cast

from lxml import etree

from irscatter.errors import LayerRef, LoadError, SecurityError, elide
from irscatter.ir import opsets
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import (
    BackEdge,
    Body,
    Edge,
    Graph,
    Layer,
    Model,
    Port,
    PortMapEntry,
    new_edge,
    new_layer,
    new_port,
    split_names,
)
from irscatter.ir.shapes import MAX_DIGITS, PartialShape, is_decimal, is_plain_number
from irscatter.limits import current as current_limits

SUPPORTED_IR_VERSIONS = (10, 11)
LAYER_KEYS = ("id", "name", "type", "version")
BODY_TAGS = {"body": "port_map", "then_body": "then_port_map", "else_body": "else_port_map"}


class Element(Protocol):
    """The part of lxml's element interface the shared builders read, which the event reader's
    kept elements have too."""

    @property
    def tag(self) -> object: ...
    @property
    def sourceline(self) -> int | None: ...
    def get(self, key: str) -> str | None: ...
    def iterchildren(self, tag: Any = ...) -> Iterator[Element]: ...


def tag_of(node: Element) -> str:
    """An element's tag as the str it is: lxml reads every parsed element's tag as str, and an
    element the event reader kept has expat's (lxml's stubs also allow the bytes or QName a
    program may assign, which lxml turns into str; a comment's tag, a function, is never asked
    for here)."""
    return cast(str, node.tag)


def _elements(node: Element, tag: str | None = None) -> Iterator[Element]:
    """Child elements, skipping comments; optionally only those with `tag` (filtered in C)."""
    return node.iterchildren(tag if tag is not None else etree.Element)


_FEW_ATTRIBUTES = 32


def attributes_of(node: Any, source: str | None = None) -> dict[str, str]:
    """An element's attributes as a new dict, in time linear in their number, and no more of them
    than the `xml_attributes` limit. (lxml looks each attribute's value up by name from the first:
    `dict(node.attrib)` of n attributes takes n^2/2 steps, over a minute for 200000; libxml2's
    XPath hands them all over in one pass.)"""
    attrib = node.attrib
    count = len(attrib)  # (lxml counts them in one pass)
    if count <= _FEW_ATTRIBUTES:
        return dict(attrib)
    limit = current_limits().xml_attributes
    if count > limit:
        raise SecurityError(f"<{tag_of(node)}> has {count} attributes, more than the limit of {limit} "
                            f"(irscatter.limits: xml_attributes)", file=source, line=node.sourceline,
                            label="xml-attributes")
    if isinstance(attrib, dict):  # (an element the event reader kept)
        return dict(attrib)
    return {value.attrname: str(value) for value in node.xpath("@*")}


def first_child(node: etree._Element, tag: str) -> etree._Element | None:
    return node.find(tag)


# The children a `<layer>` and a graph (`<net>`, a body) may hold at most once. A second one
# was left unread: a second `<data>`'s attributes, a second `<edges>`' edges.
LAYER_PARTS = frozenset({"data", "input", "output", "rt_info", "back_edges", *BODY_TAGS, *BODY_TAGS.values()})
GRAPH_PARTS = frozenset({"layers", "edges", "rt_info"})


def _first_children(ctx: ReadContext, node: etree._Element, once: frozenset[str],
                    layer: etree._Element | None = None) -> dict[str, etree._Element]:
    """The first child element of each tag, in one pass (`find` parses a path on every call);
    a second child of a tag in `once` is a defect (recovered from by reading the first)."""
    first: dict[str, etree._Element] = {}
    for child in node.iterchildren(etree.Element):
        tag = tag_of(child)
        if tag not in first:
            first[tag] = child
        elif tag in once:
            where = "<layer>" if layer is not None else f"<{tag_of(node)}>"
            ctx.recover(ctx.error(f"{where} has a second <{tag}> (the first is on line {first[tag].sourceline}); "
                                  f"it may hold one", child, layer=_ref(layer) if layer is not None else None,
                                  label="duplicate-element"))
    return first


# --- small field parsers --------------------------------------------------------------------


class ReadContext:
    """Where we are, for messages, and what to do with a defect in one element.

    Normally the first defect stops loading. When `problems` is a list (validation), a
    defect confined to one element (a port, a layer, an edge, a constant) is recorded there
    and loading goes on without that element, so that every defect can be reported at once.
    """

    def __init__(self, source: str, ir_version: int = 11, problems: list[LoadError] | None = None,
                 model_class: type[Model] = Model, progress: Callable[[int, int], None] | None = None) -> None:
        self.source = source
        self.progress = progress  # progress(bytes read, bytes in all) as a large document is read
        self.model_class = model_class  # the runtime's runnable subclass, when it loads
        self.ir_version = ir_version
        self.problems = problems
        self.body_depth = 0  # how many <body> elements enclose the layer being read
        self.plain_ports: dict[tuple, Port] = {}  # see `make_port`
        self.texts: dict[str, str] = {}  # see `make_layer`

    def error(self, message: str, node: Element | None = None, **kw: Any) -> LoadError:
        line = node.sourceline if node is not None else None
        return LoadError(message, file=self.source, line=line, **kw)

    def recover(self, error: LoadError) -> None:
        """Raise `error`, or record it and let the caller skip or repair the element."""
        if self.problems is None:
            raise error
        self.problems.append(error)


_ATTRIBUTE_LABELS = {"layer": "layer-attribute", "port": "port-attribute", "edge": "edge-attribute"}


def _uint(ctx: ReadContext, node: Element, key: str, what: str) -> int:
    tag = tag_of(node)
    label = _ATTRIBUTE_LABELS[tag]
    text = node.get(key)
    if text is None:
        raise ctx.error(f"<{tag}> {what}is missing mandatory attribute \"{key}\"", node,
                        label=label)
    t = text.strip()
    if not is_decimal(t):
        raise ctx.error(
            f'<{tag}> {what}has {key}="{elide(text)}", which is not a non-negative integer', node,
            label=label,
        )
    if len(t) > MAX_DIGITS:
        raise ctx.error(f'<{tag}> {what}has {key}="{elide(text, 24)}", {len(t)} digits: more than any id '
                        f"or port number could need", node, label=label)
    return int(t)


def ir_version(text: str | None) -> int | None:
    """The IR version a `<net version=...>` names, when it is one irscatter reads."""
    version = small_decimal(text.strip()) if text is not None else None
    return version if version in SUPPORTED_IR_VERSIONS else None


# Entries a reader's cache of repeated texts holds before it starts again: a model repeats a few
# texts over thousands of layers, and a text that never repeats (a Const's offset) must not
# make the cache grow with the model.
CACHE_ENTRIES = 4096


def remembered(cache: dict[Any, Any], key: Any, value: Any) -> Any:
    """`value`, kept in `cache` under `key` (a full cache is emptied first)."""
    if len(cache) >= CACHE_ENTRIES:
        cache.clear()
    cache[key] = value
    return value


def small_decimal(text: str | None) -> int | None:
    """`text` as a number when it is plain digits, few enough for any id or port (the fast path;
    None sends the caller to `_uint`, which says what is wrong)."""
    return int(text) if text is not None and len(text) <= MAX_DIGITS and is_decimal(text) else None


def _int(ctx: ReadContext, node: Element, key: str) -> int | None:
    text = node.get(key)
    if text is None:
        return None
    t = text.strip()
    try:
        if len(t.lstrip("+-")) > MAX_DIGITS or not is_plain_number(t):
            raise ValueError(t)
        return int(t)
    except ValueError:
        raise ctx.error(f'<{tag_of(node)}> has {key}="{elide(text)}", which is not an integer that fits', node) from None


def read_rt_info(node: Element | None, source: str | None = None) -> dict[str, Any]:
    """`<rt_info>`: `<attribute name=...>` / `<info name= value=>` / legacy `<k value=>` children."""
    if node is None:
        return {}
    out: dict[str, Any] = {}
    for child in _elements(node):
        if child.tag in ("attribute", "info") and (key := child.get("name")) is not None:
            fields = attributes_of(child, source)
            del fields["name"]
            nested = list(_elements(child))
            if nested:
                out[key] = read_rt_info(child, source)
            elif set(fields) <= {"value"}:
                out[key] = fields.get("value", "")
            else:
                out[key] = fields
        else:
            nested = list(_elements(child))
            value = child.get("value")
            out[tag_of(child)] = read_rt_info(child, source) if nested or value is None else value
    return out


# --- ports, layers, graphs ------------------------------------------------------------------


def _ref(layer: etree._Element | dict[str, str]) -> LayerRef:
    """The layer a port belongs to, for messages (built only when there is one to write)."""
    type_name, raw_id = layer.get("type", ""), layer.get("id", "?").strip()
    number = small_decimal(raw_id)
    return LayerRef(number if number is not None else elide(raw_id), layer.get("name", ""), type_name,
                    opsets.version_text(type_name, layer.get("version", "")))


def _port(ctx: ReadContext, node: etree._Element, where: str, layer: etree._Element) -> Port:
    raw_id = node.get("id")
    port_id = small_decimal(raw_id)
    if port_id is None:
        try:
            port_id = _uint(ctx, node, "id", f"({where}) ")
        except LoadError as e:
            raise e.add_context(layer=_ref(layer)) from None
    precision = None
    if (text := node.get("precision")) is not None:
        try:
            precision = ElementType.from_precision(text)
        except ValueError as e:
            ctx.recover(ctx.error(str(e), node, layer=_ref(layer), port=f"{where} port {port_id}",
                                  label="port-precision"))
    dims: list[int] = []
    rt_node = None
    for dim in node:  # comments come too: their tag is neither "dim" nor "rt_info"
        if dim.tag != "dim":
            if dim.tag == "rt_info" and rt_node is None:
                rt_node = dim
            continue
        text = dim.text
        # int() skips the same surrounding whitespace str.strip() does; an empty <dim/> has None
        try:
            value = int(text) if text is not None and is_plain_number(text) else -2
        except ValueError:
            value = -2
        if value < -1:
            text = (text or "").strip()
            ctx.recover(ctx.error(f"<dim>{elide(text)}</dim> must be an integer >= -1 (-1 = dynamic)", dim,
                                  layer=_ref(layer), port=f"{where} port {port_id}", label="port-dim"))
            value = -1  # validation goes on with the dimension unknown
        dims.append(value)
    return make_port(ctx, port_id, precision, node.get("names"), dims, rt_node)


def make_port(ctx: ReadContext, port_id: int, precision: ElementType | None, names: str | None, dims: list[int],
              rt_node: Any) -> Port:
    """The port of checked fields; `names` is the attribute's text, `rt_node` its `<rt_info>` element."""
    rt_node = _readable_rt_info(ctx, rt_node)
    if names or rt_node is not None:
        return new_port(port_id, precision, port_names(names) if names else (), PartialShape.of(dims),
                        read_rt_info(rt_node, ctx.source) if rt_node is not None else {})
    # A port without names or rt_info is its id, type and dims: ports are frozen, so layers
    # alike (mostly their inputs) share one object, some 140 bytes less a port.
    key = (port_id, precision, *dims)
    port = ctx.plain_ports.get(key)
    if port is None:
        port = ctx.plain_ports[key] = new_port(port_id, precision, (), PartialShape.of(dims), {})
    return port


def _readable_rt_info(ctx: ReadContext, rt_node: Any) -> Any:
    """A layer's or port's `<rt_info>` element, or None in IR v10, which does not have them
    there (a v10 file that writes one anyway has it left unread)."""
    return rt_node if ctx.ir_version > 10 else None


def port_names(text: str) -> tuple[str, ...]:
    """`split_names`, without its loop for the common single name."""
    if "," in text or "\\" in text:
        return split_names(text)
    name = text.strip()
    return (name,) if name else ()


def parse_layer_element(ctx: ReadContext, node: etree._Element) -> Layer:
    attrib = attributes_of(node, ctx.source)  # one conversion: lxml's attribute lookups each cost more
    missing = [k for k in LAYER_KEYS if k not in attrib]
    if missing:
        raise ctx.error(
            "<layer> is missing mandatory attribute" + ("s " if len(missing) > 1 else " ")
            + ", ".join(f'"{k}"' for k in missing),
            node, label="layer-attribute",
        )
    raw_id = attrib["id"]
    layer_id = small_decimal(raw_id)
    if layer_id is None:
        layer_id = _uint(ctx, node, "id", "")
    children = _first_children(ctx, node, LAYER_PARTS, node)
    data = children.get("data")
    attrs = attributes_of(data, ctx.source) if data is not None else {}
    inputs_node, outputs_node = children.get("input"), children.get("output")
    inputs = [_port(ctx, p, "input", node) for p in inputs_node.iterchildren("port")] if inputs_node is not None else []
    outputs = [_port(ctx, p, "output", node) for p in outputs_node.iterchildren("port")] if outputs_node is not None else []
    bodies = {}
    for body_tag, map_tag in BODY_TAGS.items():
        body_node = children.get(body_tag)
        if body_node is not None:
            bodies[body_tag] = _body(ctx, body_node, children.get(map_tag), children.get("back_edges"))
    return make_layer(ctx, layer_id, attrib, attrs, inputs, outputs, bodies, children.get("rt_info"), node.sourceline)


def make_layer(ctx: ReadContext, layer_id: int, attrib: dict[str, str], attrs: dict[str, str], inputs: list[Port],
               outputs: list[Port], bodies: dict[str, Body], rt_node: Any, line: int | None) -> Layer:
    """The layer of checked parts: `attrib` holds the `<layer>` element's attributes, mandatory
    ones included, `attrs` those of its `<data>` (a dict of the caller's own, whose values are
    replaced by equal ones)."""
    if len(inputs) + len(outputs) > 1:
        _check_port_ids(ctx, attrib, inputs, outputs, line)
    # Types, versions and attribute values repeat from layer to layer: the graph keeps one
    # string of each text read (each a parser's own object, of 50 bytes or more, otherwise).
    texts = ctx.texts
    for key, value in attrs.items():
        attrs[key] = texts.setdefault(value, value)
    type_name, version = attrib["type"], attrib["version"]
    return new_layer(
        layer_id,
        attrib["name"],
        texts.setdefault(type_name, type_name),
        texts.setdefault(version, version),
        attrs,
        {k: v for k, v in attrib.items() if k not in LAYER_KEYS} if len(attrib) > 4 else {},
        inputs,
        outputs,
        read_rt_info(rt_node, ctx.source) if _readable_rt_info(ctx, rt_node) is not None else {},
        bodies,
        line,
    )


def _check_port_ids(ctx: ReadContext, attrib: dict[str, str], inputs: list[Port], outputs: list[Port],
                    line: int | None) -> None:
    """An edge names a port by its id alone, among the layer's inputs and outputs together: two
    ports of one id made both Results of a Split get its first half."""
    ids = [p.id for p in inputs] + [p.id for p in outputs]
    if len(set(ids)) == len(ids):
        return
    sides = ["input"] * len(inputs) + ["output"] * len(outputs)
    seen: dict[int, str] = {}
    for port_id, side in zip(ids, sides):
        if port_id in seen:
            raise LoadError(f"{side} port {port_id} has the id of an earlier {seen[port_id]} port: the ports of a "
                            f"layer need distinct ids", file=ctx.source, line=line, layer=_ref(attrib),
                            port=f"{side} port {port_id}", label="duplicate-port")
        seen[port_id] = side


def _port_map(ctx: ReadContext, node: etree._Element | None, tag: str) -> list[PortMapEntry]:
    if node is None:
        return []
    out = []
    for entry in _elements(node, tag):
        ext = _int(ctx, entry, "external_port_id")
        internal = _int(ctx, entry, "internal_layer_id")
        if ext is None or internal is None:
            raise ctx.error(f"<port_map> <{tag}> needs external_port_id and internal_layer_id", entry)
        out.append(
            PortMapEntry.model_construct(
                external_port_id=ext,
                internal_layer_id=internal,
                axis=_int(ctx, entry, "axis"),
                start=_int(ctx, entry, "start"),
                end=_int(ctx, entry, "end"),
                stride=_int(ctx, entry, "stride"),
                part_size=_int(ctx, entry, "part_size"),
                purpose=entry.get("purpose"),
            )
        )
    return out


def plain_edge(cls: type[Edge] | type[BackEdge], raw: list[str | None]) -> Edge | BackEdge | None:
    """The edge of an element's values for `cls`'s fields, in their order, when every one is a
    plain number; None sends the caller to the path that says what is wrong."""
    # Every value present and non-empty, and all of them digits: one test of their join.
    if not all(raw):
        return None
    values = cast("list[str]", raw)  # (none is None: `all` saw each)
    if not (joined := "".join(values)).isdigit() or not joined.isascii():
        return None
    if len(joined) > MAX_DIGITS and max(map(len, values)) > MAX_DIGITS:
        return None
    if cls is Edge:  # (the common class, its fields named: a dict built from names costs twice as much)
        from_layer, from_port, to_layer, to_port = map(int, values)
        return new_edge(from_layer, from_port, to_layer, to_port)
    return cls(*map(int, values))  # (a back edge, of a loop body: rare)


_EDGE_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in (Edge, BackEdge)}
EDGE_KEYS = {cls: tuple(f.replace("_", "-") for f in names) for cls, names in _EDGE_FIELDS.items()}


def _edge_list(ctx: ReadContext, parent: etree._Element | None, cls: type[Edge] | type[BackEdge], what: str) -> list:
    """`<edge>` children as `cls`; each field `from_layer` is read from the attribute `from-layer`."""
    if parent is None:
        return []
    edges = []
    names, keys = _EDGE_FIELDS[cls], EDGE_KEYS[cls]
    for e in parent.iterchildren("edge"):
        edge = plain_edge(cls, list(map(e.get, keys)))
        if edge is not None:
            edges.append(edge)
            continue
        try:  # the slow path, for its message
            edges.append(cls(**{f: _uint(ctx, e, key, what) for f, key in zip(names, keys)}))
        except LoadError as err:
            ctx.recover(err)  # validation: the edge is left out
    return edges


def _body(ctx: ReadContext, body: etree._Element, port_map: etree._Element | None, back: etree._Element | None) -> Body:
    limit = current_limits().body_depth
    if ctx.body_depth >= limit:
        raise ctx.error(f"sub-graph bodies are nested more than {limit} deep (irscatter.limits: body_depth)", body,
                        label="body-depth")
    ctx.body_depth += 1
    try:
        graph = read_graph(ctx, body, Graph)
    finally:
        ctx.body_depth -= 1
    return assemble_body(ctx, graph, port_map, back)


def assemble_body(ctx: ReadContext, graph: Graph, port_map: Any, back: Any) -> Body:
    """A body of its graph, read already, and its layer's `<port_map>` and `<back_edges>` elements."""
    return Body.model_construct(
        graph=graph,
        inputs=_port_map(ctx, port_map, "input"),
        outputs=_port_map(ctx, port_map, "output"),
        back_edges=_edge_list(ctx, back, BackEdge, "of <back_edges> "),
    )


def read_graph(ctx: ReadContext, node: etree._Element, cls: type[Graph], **fields: Any) -> Graph:
    children = _first_children(ctx, node, GRAPH_PARTS)
    layers_node = children.get("layers")
    layers = []
    for n in layers_node.iterchildren("layer") if layers_node is not None else ():
        try:
            layers.append(parse_layer_element(ctx, n))
        except LoadError as err:
            ctx.recover(err)  # validation: the layer is left out
    edges = _edge_list(ctx, children.get("edges"), Edge, "")
    return cls.model_construct(layers=layers, edges=edges, **fields)


