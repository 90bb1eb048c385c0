"""Reading the plainest IR documents with regular expressions, a layer at a time.

expat calls a Python handler at every start and end of an element, some 17 elements a layer
in a usual IR, and that dispatch alone costs more than libxml2's whole parse. Most documents
the writers make hold nothing but the format's elements, in the order the writers put them,
with double-quoted attribute values and no comment, entity or CDATA section. This reader takes
such a document: one match of a compiled expression a layer, ending at its `</layer>`, and
one for all the edges. An `<input>` or `<output>` whose text repeats an earlier one (the same
port ids, types and dims, no names) is read once and its ports shared, as the other readers
share such ports (`building.make_port`); a `<data>` whose text repeats is read once too.

It builds through the constructors the other readers share (`irscatter.ir.building`), and
raises `Unread` for anything its expressions do not cover exactly, a defect included: the
event reader (`irscatter.ir.events`) then reads the document, or leaves it to the tree
reader, which writes every message. What it takes is well-formed by construction: the
expressions cover every character of the document, admit no character XML forbids, and an
element's attributes are read into a dict only when their names are distinct. The line of a
layer is where its start tag ends, as the other readers give it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from lxml import etree

from irscatter.errors import IRError
from irscatter.ir.building import (
    ReadContext,
    ir_version,
    make_layer,
    make_port,
    port_names,
    read_rt_info,
    remembered,
    small_decimal,
)
from irscatter.ir.element_types import ElementType
from irscatter.ir.events import Unread, eligible
from irscatter.ir.graph import Edge, Model, Port, new_edge, new_port
from irscatter.ir.shapes import MAX_DIGITS
from irscatter.limits import current as current_limits

_S = "[ \t\n]"  # XML's white space, but a carriage return, which the reader refuses (XML rewrites it)
# Every repetition is possessive (`*+`): what it took is never given back, so that the regular
# expression engine keeps no stack of places to go back to, which it would grow layer by layer.
_TEXT = '[^"<&\t\n]*+'  # (a tab or a line end in a value becomes a space in XML: refused too)
_VALUE = f'"{_TEXT}"'
_ATTRIBUTES = f"(?:{_S}++[A-Za-z_][A-Za-z0-9_.-]*+{_S}*+={_S}*+{_VALUE})*+"
_ATTRIBUTE = re.compile(f'{_S}+([A-Za-z_][A-Za-z0-9_.-]*){_S}*={_S}*"([^"]*)"')
_NUMBER = f"([0-9]{{1,{MAX_DIGITS}}}+)"
# A Const's <data> attributes in the order OpenVINO's writer gives them (`_Reader._data`).
_CONST_DATA_KEYS = ("element_type", "shape", "offset", "size")
_CONST_DATA = re.compile("".join(f'{_S}+{key}{_S}*={_S}*"([^"]*)"' for key in _CONST_DATA_KEYS))
_DIM = f"<dim>{_S}*+-?[0-9]++{_S}*+</dim>"
_PORT = f"{_S}*+<port{_ATTRIBUTES}{_S}*+(?:/>|>(?:{_S}*+{_DIM})*+{_S}*+</port>)"
_PORTS = re.compile(f"<port({_ATTRIBUTES}){_S}*+(?:/>|>((?:{_S}*+{_DIM})*+){_S}*+</port>)")
_DIM_TEXT = re.compile("<dim>([^<]*)</dim>")
# A `names` attribute of a port, split out of an <input>'s or <output>'s text: what precedes its
# value, and the value.
_NAME_VALUES = re.compile(f'({_S}names{_S}*=[ \t\n]*)"([^"]*)"')
# The attributes before a port's first `names`, whole (a value may hold ' names="'), and its value.
_NAMES = re.compile(f'((?:{_S}++(?!names[ \t\n=])[A-Za-z_][A-Za-z0-9_.-]*+{_S}*+={_S}*+"[^"]*+")*+)'
                    f'{_S}++names{_S}*+={_S}*+"([^"]*+)"')

# A layer as the writers write it: its four attributes in this order (others after them), then
# <data>, <input> and <output>, each at most once; the empty group marks where its start tag ends.
_LAYER = re.compile(
    f'{_S}*+<layer{_S}++id="{_NUMBER}"{_S}++name="({_TEXT})"{_S}++type="({_TEXT})"{_S}++version="({_TEXT})"'
    f'({_ATTRIBUTES}){_S}*+>()'
    f"{_S}*+(?:<data({_ATTRIBUTES}){_S}*+/>{_S}*+)?+"
    f"(?:<input>((?:{_PORT})*+){_S}*+</input>{_S}*+)?+"
    f"(?:<output>((?:{_PORT})*+){_S}*+</output>{_S}*+)?+"
    "</layer>")
_EDGE = (f'{_S}*+<edge{_S}++from-layer="{_NUMBER}"{_S}++from-port="{_NUMBER}"{_S}++to-layer="{_NUMBER}"'
         f'{_S}++to-port="{_NUMBER}"{_S}*+/>')
_EDGES = re.compile(f"{_S}*+</layers>{_S}*+<edges>((?:{_EDGE.replace('(', '(?:')})*+){_S}*+</edges>{_S}*+")
_EDGE_VALUES = re.compile(_EDGE)
_HEAD = re.compile(
    f"(?:<\\?xml{_S}++version{_S}*+={_S}*+(['\"])1\\.0\\1(?:{_S}++encoding{_S}*+={_S}*+(['\"])(?i:utf-8)\\2)?+{_S}*+\\?>)?+"
    f"{_S}*+<net({_ATTRIBUTES}){_S}*+>{_S}*+<layers>")
_TAIL = re.compile(f"(?:(<rt_info{_S}*/>|<rt_info>.*</rt_info>){_S}*)?</net>{_S}*", re.DOTALL)
# Characters XML does not allow, as their UTF-8 bytes: C0 controls but tab and line end
# (`_has_forbidden`), and U+FFFE and U+FFFF (a carriage return is refused too: XML rewrites it).
_ALLOWED_CONTROLS = (9, 10)
_NOT_CHARACTERS = (b"\xef\xbf\xbe", b"\xef\xbf\xbf")
# How deep the format's elements nest here (<net>, <layers>, <layer>, <output>, <port>, <dim>),
# and how many attributes an edge or a layer has.
_DEPTH = 6
_FIXED_ATTRIBUTES = 4


def read_net(data: bytes, ctx: ReadContext) -> Model:
    """The model of a `<net>` document that has passed the loader's checks of its size, markup
    and prologue; raises `Unread` for anything the event reader must read instead."""
    text = _text(data)
    head = _HEAD.match(text)
    if head is None:
        raise Unread()
    limits = current_limits()
    if min(limits.xml_depth, 256) < _DEPTH or limits.xml_attributes < _FIXED_ATTRIBUTES:
        raise Unread()
    reader = _Reader(ctx, text, limits.xml_attributes)
    net = reader.attributes(head.group(3))
    version = ir_version(net.get("version"))
    if version is None:
        raise Unread()
    ctx.ir_version = version
    try:
        layers, at = reader.layers(head.end())
    except ValueError:  # a number past what int() reads: the event reader says what happens to it
        raise Unread() from None
    edges, at = _edges(text, at)
    tail = _TAIL.fullmatch(text, at)
    if tail is None:
        raise Unread()
    rt_info = _rt_info(tail.group(1), ctx.source, limits.xml_depth)
    if ctx.progress is not None:  # (only at the end: a document left to the event reader is read again from its start)
        ctx.progress(len(data), len(data))
    return ctx.model_class.model_construct(layers=layers, edges=edges, name=net.get("name", ""),
                                           ir_version=version, rt_info=rt_info)


def _text(data: bytes) -> str:
    """The document as text, when it is UTF-8 with none of what this reader leaves to others."""
    if not eligible(data) or _has_forbidden(data):
        raise Unread()
    if not data.isascii() and any(bad in data for bad in _NOT_CHARACTERS):
        raise Unread()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unread() from None
    text = text.removeprefix("\ufeff")
    declaration = text.find(">") if text.startswith("<?xml") else 0  # the one instruction read here
    # (a search for one character is many times faster than one for two: the pair is looked
    # for only where the character stands)
    if "&" in text or ("!" in text and "<!" in text):
        raise Unread()
    if text.find("?", declaration) >= 0 and text.find("<?", declaration) >= 0:
        raise Unread()
    return text


def _split_names(text: str) -> list[str]:
    """`_NAME_VALUES.split(text)`. Where "names" stands once in the text, a match can only start
    at the white space before it: matched there, rather than tried at every character."""
    at = text.find("names")
    if at > 0 and text.find("names", at + 5) < 0:
        named = _NAME_VALUES.match(text, at - 1)
        if named is not None:
            return [text[:at - 1], named.group(1), named.group(2), text[named.end():]]
    return _NAME_VALUES.split(text)


def _has_forbidden(data: bytes) -> bool:
    """Whether the document holds a C0 control character but tab and line end, found by numpy
    (several times as fast as a pass of `bytes.translate` over a large document): the usual
    document holds none but its line ends."""
    codes = np.frombuffer(data, np.uint8)
    controls = codes[codes < 32]
    return bool(np.any(~np.isin(controls, _ALLOWED_CONTROLS)))


def _edges(text: str, at: int) -> tuple[list[Edge], int]:
    """The edges after `</layers>`, and where what follows `</edges>` starts."""
    section = _EDGES.match(text, at)
    if section is None:
        raise Unread()
    values = _EDGE_VALUES.findall(text, section.start(1), section.end(1))
    return [new_edge(int(a), int(b), int(c), int(d)) for a, b, c, d in values], section.end()


def _rt_info(fragment: str | None, source: str, max_depth: int) -> dict[str, Any]:
    """The net's `<rt_info>`: a fragment of a document without entities or comments, so that
    lxml reads it alone as it does in place (what it holds is free-form). Nested past the
    document's depth limit (the fragment's root stands one below `<net>`), it is the tree
    reader's to refuse."""
    if fragment is None:
        return {}
    try:
        root = etree.fromstring(fragment, _FRAGMENT_PARSER)
        if root.xpath("boolean(/*" + "/*" * (max_depth - 1) + ")"):
            raise Unread()
        return read_rt_info(root, source)
    except (etree.XMLSyntaxError, IRError, ValueError):
        raise Unread() from None


_FRAGMENT_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                                   remove_blank_text=True, collect_ids=False)


class _Reader:
    """The layers of one document, with what repeats from layer to layer read once."""

    def __init__(self, ctx: ReadContext, text: str, max_attributes: int) -> None:
        self.ctx, self.text, self.max_attributes = ctx, text, max_attributes
        self.data: dict[str, dict[str, str]] = {}  # a <data>'s attributes by their text
        self.ports: dict[str, tuple[Port, ...]] = {}  # an <input>'s or <output>'s ports by its text
        # The ports of a named <input> or <output> by its text but the names (`_named_ports`); a
        # named one stands for its id, type and shape, under other names.
        self.named: dict[tuple[str, ...], tuple[Port, ...]] = {}
        # A port's id, type and dims by the text of its other attributes and of its dims.
        self.skeletons: dict[tuple[str, str | None], tuple[int, ElementType | None, list[int]]] = {}

    def attributes(self, text: str) -> dict[str, str]:
        pairs = _ATTRIBUTE.findall(text)
        attrib = dict(pairs)
        if len(attrib) != len(pairs) or len(attrib) > self.max_attributes:
            raise Unread()  # a name twice is malformed: the tree reader says so
        return attrib

    def layers(self, at: int) -> tuple[list, int]:
        """The layers from `at` on, and where the text after the last one starts."""
        text, ctx, match = self.text, self.ctx, _LAYER.match
        layers: list = []
        line, counted = 1, 0
        while (m := match(text, at)) is not None:
            tag_end = m.end(6)
            line += text.count("\n", counted, tag_end)
            counted = tag_end
            layer_id, name, type_name, version, extra_text, _, data_text, inputs_text, outputs_text = m.groups()
            attrib = {"id": layer_id, "name": name, "type": type_name, "version": version}
            if extra_text:
                attrib = self._with_extra(attrib, extra_text)
            attrs = {} if data_text is None else dict(self._data(data_text))
            inputs = self._ports(inputs_text) if inputs_text is not None else []
            outputs = self._ports(outputs_text) if outputs_text is not None else []
            try:
                layers.append(make_layer(ctx, int(layer_id), attrib, attrs, inputs, outputs, {}, None, line))
            except IRError:
                raise Unread() from None  # (two ports of one id: the tree reader says which)
            at = m.end()
        return layers, at

    def _with_extra(self, attrib: dict[str, str], text: str) -> dict[str, str]:
        """A layer's four attributes and the others its start tag holds (OpenVINO writes a
        Result's `output_names` there)."""
        extra = self.attributes(text)
        if not extra.keys().isdisjoint(attrib) or len(extra) + len(attrib) > self.max_attributes:
            raise Unread()  # (an attribute twice is malformed)
        return attrib | extra

    def _data(self, text: str) -> dict[str, str]:
        attrs = self.data.get(text)
        if attrs is not None:
            return attrs
        # A Const's <data> as OpenVINO writes it, its own (by its offset): read by one match,
        # and not kept, where it would only push out the texts that do repeat.
        if (const := _CONST_DATA.fullmatch(text)) is not None:
            return dict(zip(_CONST_DATA_KEYS, const.groups()))
        return remembered(self.data, text, self.attributes(text))

    def _ports(self, text: str) -> list[Port]:
        ports = self.ports.get(text)
        if ports is not None:
            return list(ports)
        if "names" in text:  # (ports with names are a layer's own, as the other readers make them)
            return self._named_ports(text)
        return list(remembered(self.ports, text, tuple(self._read_ports(text))))

    def _read_ports(self, text: str) -> list[Port]:
        return [self._port(m.group(1), m.group(2)) for m in _PORTS.finditer(text)]

    def _named_ports(self, text: str) -> list[Port]:
        """The ports of an `<input>` or `<output>` that names them. Its text but the names'
        values mostly repeats (an output of a repeated block, under another tensor name), so
        what the ports are apart from their names is kept by that text, and a text that repeats
        it has only its names read. Every "names" of the text must be a `names` attribute the
        split found, or the text is read as it is: then no value holds what looks like one."""
        pieces = _split_names(text)
        values = pieces[2::3]
        if text.count("names") != len(values):
            return self._read_ports(text)
        rest = (*pieces[0::3], *pieces[1::3])
        kept = self.named.get(rest)
        if kept is None:
            ports = self._read_ports(text)
            if sum(1 for port in ports if port.names) == len(values):  # (not so for an empty names value)
                remembered(self.named, rest, tuple(ports))
            return ports
        given = iter(values)
        return [new_port(port.id, port.precision, port_names(next(given)), port.shape, {}) if port.names else port
                for port in kept]

    def _port(self, attributes: str, dims_text: str | None) -> Port:
        names = None
        if (named := _NAMES.match(attributes)) is not None:  # the rest of a named port mostly repeats
            names = named.group(2)
            attributes = named.group(1) + attributes[named.end():]
        key = (attributes, dims_text)
        known = self.skeletons.get(key)
        if known is None:
            known = remembered(self.skeletons, key, self._skeleton(attributes, dims_text))
        port_id, precision, dims = known
        return make_port(self.ctx, port_id, precision, names, dims, None)

    def _skeleton(self, attributes: str, dims_text: str | None) -> tuple[int, ElementType | None, list[int]]:
        """A port's id, type and dims, of its attributes but `names`."""
        attrib = self.attributes(attributes)
        port_id = small_decimal(attrib.get("id"))
        if port_id is None or "names" in attrib:  # (a second names: malformed)
            raise Unread()
        precision_text = attrib.get("precision")
        try:
            precision = None if precision_text is None else ElementType.from_precision(precision_text)
        except ValueError:
            raise Unread() from None
        dims = [int(d) for d in _DIM_TEXT.findall(dims_text)] if dims_text else []
        if dims and min(dims) < -1:
            raise Unread()
        return port_id, precision, dims
