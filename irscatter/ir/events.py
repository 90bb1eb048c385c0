"""Reading an IR document in one pass of expat's events, without a parse tree.

The tree reader (lxml, `irscatter.ir.loader`) parses the whole document into a tree and then
walks it, and for a large model the walk costs more than the parse: each element it visits
becomes a Python proxy, each attribute a lookup through it, and the tree is freed afterwards.
expat hands every element's attributes over as a dict as it reads them, and this reader builds
each port and layer when its element ends, through the constructors both readers share
(`irscatter.ir.building`). For 20000 layers it takes a quarter less time, the tree's memory
not counted.

It reads only what it can read exactly as the tree reader does: UTF-8 documents made of the IR
format's elements, each where the format puts it and at most once, with plain values. Anything
else, whether a defect (whose message, line and label the tree reader writes), an element the
format does not have, a namespace or a value past libxml2's limits, raises `Unread`, and the
loader gives the document to the tree reader, which stays the authority on what a document
means. The subtrees whose meaning the shared builders work out (`<rt_info>`, port maps, back
edges) are kept whole as `_Kept` elements and handed to them as they are.

The line of a layer is where its start tag ends, as libxml2 counts it, except past line 65535,
where libxml2 gives 65535 or the line of something near, and this reader goes on counting.
"""

from __future__ import annotations

import pyexpat
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from lxml import etree

from irscatter.errors import LoadError
from irscatter.ir.building import (
    BODY_TAGS,
    EDGE_KEYS,
    ReadContext,
    assemble_body,
    ir_version,
    make_layer,
    make_port,
    plain_edge,
    read_rt_info,
    small_decimal,
)
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Edge, Graph, Model
from irscatter.ir.shapes import is_plain_number
from irscatter.limits import current as current_limits

# libxml2's limits without its huge-tree option, which the tree reader keeps: a name of more
# than 50000 characters, a value, text, comment or CDATA section of more than ten million,
# elements nested deeper than 256. A document that could pass one is left to the tree reader
# (each needs a long run of characters without a "<", or a long comment or processing
# instruction, or a CDATA section in a document that long).
_LIBXML2_NAME_LENGTH = 50_000
_LIBXML2_TEXT_LENGTH = 10_000_000
_LIBXML2_DEPTH = 256

_DECLARED_ENCODING = re.compile(rb"encoding\s*=\s*[\"']([^\"']*)[\"']")
# A layer's start tag, to its closing ">" (one inside a quoted value does not close it). No
# "<" can stand in a start tag, so neither can a match: each is found in one pass.
if sys.version_info >= (3, 11):
    _LAYER_TAG = re.compile(rb"""<layer(?=[\s/>])(?:[^<>"']++|"[^<"]*+"|'[^<']*+')*+>""")
else:  # no possessive repetition before 3.11: one character a step, whose branches never overlap
    _LAYER_TAG = re.compile(rb"""<layer(?=[\s/>])(?:[^<>"']|"[^<"]*"|'[^<']*')*>""")
_XML_VERSION = re.compile(rb"version\s*=\s*[\"']([^\"']*)[\"']")
# A namespace declaration or a name in the xml namespace, anywhere: one expression, which rules
# both out over a large document in a fraction of the time two substring searches take.
_NAMESPACED = re.compile(rb"xml(?:ns|:)")


class Unread(Exception):
    """The document holds something the event reader leaves to the tree reader."""


class _Kept:
    """An element of a subtree kept whole, with the part of lxml's element interface the shared
    builders use."""

    __slots__ = ("tag", "attrib", "children", "sourceline")

    def __init__(self, tag: str, attrib: dict[str, str], sourceline: int) -> None:
        self.tag, self.attrib, self.sourceline = tag, attrib, sourceline
        self.children: list[_Kept] = []

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.attrib.get(key, default)

    def iterchildren(self, tag: Any = etree.Element) -> Iterator[_Kept]:
        """The child elements, or those named `tag` (lxml's `etree.Element` stands for any)."""
        return iter(self.children) if tag is etree.Element else (c for c in self.children if c.tag == tag)


def read_net(data: bytes, ctx: ReadContext) -> Model:
    """The model of a `<net>` document that has passed the loader's checks of its size, markup
    and prologue; raises `Unread` for anything the tree reader must read instead."""
    if not eligible(data):
        raise Unread()
    reader = _Reader(ctx, _layer_lines(data))
    try:
        _parse(reader.parser, data, ctx.progress)
    except (LoadError, ValueError, LookupError, pyexpat.ExpatError):  # LookupError: an encoding Python lacks
        raise Unread() from None
    finally:
        # The parser's handlers are the reader's methods, and the reader holds the parser and
        # the model: broken here, that cycle leaves the model to be freed when its last user
        # lets go of it rather than by a pass of the garbage collector.
        del reader.parser
    if reader.model is None or reader.layers_read != len(reader.lines):
        raise Unread()  # (or a "<layer" in a comment, which would have shifted the lines)
    return reader.model


# A document read with a progress callback is fed to expat in pieces of this many bytes.
_PIECE = 1 << 22


def _parse(parser: Any, data: bytes, progress: Callable[[int, int], None] | None) -> None:
    """The whole document through expat: at once, or piece by piece with `progress(read, total)`
    after each. expat keeps its state and lines across pieces, but would hand a text cut by a
    piece's end over in two parts, which the reader takes for a text a comment cuts (see
    `_Reader._dim`): a piece ends just after a '>', so no element's text is ever cut."""
    if progress is None:
        parser.Parse(data, True)
        return
    view, start = memoryview(data), 0
    while True:
        end = len(data)
        if start + _PIECE < end:
            end = data.rfind(b">", start, start + _PIECE) + 1 or start + _PIECE
        parser.Parse(bytes(view[start:end]), end == len(data))
        progress(end, len(data))
        if end == len(data):
            return
        start = end


def _layer_lines(data: bytes) -> list[int]:
    """The line on which each `<layer>` start tag ends, in document order: where libxml2 puts
    its `sourceline`, found in one pass (expat's own position costs more to ask for, layer by
    layer, than this)."""
    lines, line, at = [], 1, 0
    for tag in _LAYER_TAG.finditer(data):
        end = tag.end()
        line += data.count(b"\n", at, end)
        lines.append(line)
        at = end
    return lines


def eligible(data: bytes) -> bool:
    """A UTF-8 document without namespaces, within the element and depth limits by construction,
    and without a run of text long enough to pass one of libxml2's length limits."""
    if _NAMESPACED.search(data):
        return False  # (xml:lang and its kind are named in a namespace too)
    if b"\x00" in data or data[:2] in (b"\xfe\xff", b"\xff\xfe"):
        return False  # UTF-16 or UTF-32, with a byte order mark or without (UTF-8 text has no NUL)
    head = data.removeprefix(b"\xef\xbb\xbf")
    if head.startswith(b"<?xml"):  # the declaration: XML 1.0 (libxml2 and expat differ on others), UTF-8
        end = max(head.find(b"?>"), 0)
        version, declared = _XML_VERSION.search(head, 0, end), _DECLARED_ENCODING.search(head, 0, end)
        if version is None or version.group(1) != b"1.0":
            return False
        if declared is not None and declared.group(1).lower() not in (b"utf-8", b"utf8"):
            return False
    opens = np.flatnonzero(np.frombuffer(data, np.uint8) == ord("<"))
    if opens.size > current_limits().xml_elements:  # (each element opens with one)
        return False
    if int(np.diff(opens, prepend=-1, append=len(data)).max()) > _LIBXML2_NAME_LENGTH:
        return False  # a run that long between two "<" (or before the first, or after the last)
    # (libxml2 makes one text of CDATA sections and the text around them, "<" included)
    return len(data) <= _LIBXML2_TEXT_LENGTH or b"<![CDATA[" not in data and all(
        _longest_section(data, opening, closing) <= _LIBXML2_TEXT_LENGTH
        for opening, closing in ((b"<!--", b"-->"), (b"<?", b"?>")))


def _longest_section(data: bytes, opening: bytes, closing: bytes) -> int:
    """The longest comment or processing instruction (either may hold `<`)."""
    longest, at = 0, data.find(opening)
    while at >= 0:
        end = data.find(closing, at + len(opening))
        end = len(data) if end < 0 else end
        longest = max(longest, end - at)
        at = data.find(opening, end)
    return longest


# What each open element on the reader's stack is (`_TOP`: none is open yet).
_TOP, _NET, _LAYERS, _LAYER, _PORTS, _PORT, _EDGES, _BODY, _KEPT = range(9)


_PORT_MAP_TAGS = frozenset(BODY_TAGS.values())
# What else an IR v10 `<net>` may hold: the older meta_data (read as rt_info where there is
# none), and what the Model Optimizer wrote beside the graph, which neither reader reads.
_NET_KEPT = frozenset({"meta_data", "pre-process", "statistics"})


class _Graph:
    """A graph being read: `<net>` or a body."""

    __slots__ = ("layers", "edges", "kept")

    def __init__(self) -> None:
        self.layers: list = []
        self.edges: list = []
        self.kept: dict[str, _Kept | None] = {}  # by tag: what of `<layers>`, `<edges>` and net's `<rt_info>` is read


class _Layer:
    """A layer being read."""

    __slots__ = ("attrib", "line", "parts", "inputs", "outputs", "bodies")

    def __init__(self, attrib: dict[str, str], line: int) -> None:
        self.attrib, self.line = attrib, line
        self.parts: dict[str, Any] = {}  # data attributes, port lists, kept subtrees by tag
        self.inputs: list = []
        self.outputs: list = []
        self.bodies: dict[str, Graph] = {}


class _Reader:
    """expat's handlers. What is open is a stack (`kinds`, with `items`, what each one builds);
    the elements that have no children in the format (`<dim>`, `<edge>`, `<data>`) are not put
    on it but noted in `leaf`, and a child of one is refused."""

    def __init__(self, ctx: ReadContext, lines: list[int]) -> None:
        self.ctx, self.lines = ctx, lines
        self.layers_read = 0
        limits = current_limits()
        self.max_depth = min(limits.xml_depth, _LIBXML2_DEPTH)
        self.max_attributes = limits.xml_attributes
        self.body_limit = limits.body_depth
        self.kinds: list[int] = [_TOP]
        self.items: list[Any] = [None]
        self.leaf: str | None = None
        self.model: Model | None = None
        self.net_attrib: dict[str, str] = {}
        self.port_attrib: dict[str, str] = {}
        self.dims: list[int] = []
        self.port_rt_info: _Kept | None = None
        self.chunks: list[str] = []  # the text of the open <dim>
        parser = self.parser = pyexpat.ParserCreate(namespace_separator=" ")
        parser.buffer_text = True
        parser.SetParamEntityParsing(pyexpat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._refuse
        parser.EntityDeclHandler = self._refuse
        parser.StartElementHandler = self.start
        parser.EndElementHandler = self.end
        parser.CommentHandler = parser.ProcessingInstructionHandler = self._inside_dim

    def _refuse(self, *_: Any) -> None:
        raise Unread()

    def _inside_dim(self, *_: Any) -> None:
        """A comment or processing instruction: the tree reader reads a `<dim>`'s text up to the first."""
        if self.leaf == "dim":
            raise Unread()

    # --- elements opening ------------------------------------------------------------------

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        kinds = self.kinds
        if self.leaf is not None or len(kinds) > self.max_depth or len(attrib) > self.max_attributes:
            raise Unread()
        kind = kinds[-1]
        if kind == _PORT:
            if tag == "dim":
                self.leaf = tag
                self.chunks = []
                self.parser.CharacterDataHandler = self.chunks.append  # only a dim's text is read
            elif tag == "rt_info" and self.port_rt_info is None:
                self.port_rt_info = self._open_kept(tag, attrib)
            else:
                raise Unread()
        elif kind == _PORTS and tag == "port":
            self.port_attrib, self.dims, self.port_rt_info = attrib, [], None
            kinds.append(_PORT)
            self.items.append(None)
        elif kind == _EDGES and tag == "edge":
            edge = plain_edge(Edge, list(map(attrib.get, EDGE_KEYS[Edge])))
            if edge is None:
                raise Unread()
            self.items[-1].edges.append(edge)
            self.leaf = tag
        elif kind == _LAYERS and tag == "layer":
            kinds.append(_LAYER)
            self.items.append(_Layer(attrib, self._line()))
        elif kind == _LAYER:
            parts = self.items[-1].parts
            if tag in parts:
                raise Unread()
            if tag == "data":
                parts[tag] = attrib
                self.leaf = tag
            else:
                self._layer_part(tag, attrib, parts)
        elif kind == _KEPT:
            if tag == "layer":  # out of its place (or free-form rt_info): the tree reader says which
                raise Unread()
            kept = _Kept(tag, attrib, self.parser.CurrentLineNumber)
            self.items[-1].children.append(kept)
            kinds.append(_KEPT)
            self.items.append(kept)
        elif kind == _NET or kind == _BODY:
            self._graph_part(kind, tag, attrib)
        elif kind == _TOP and tag == "net" and self.model is None:
            self.net_attrib = attrib
            self._net_version(attrib)
            kinds.append(_NET)
            self.items.append(_Graph())
        else:
            raise Unread()

    def _open_kept(self, tag: str, attrib: dict[str, str]) -> _Kept:
        kept = _Kept(tag, attrib, self.parser.CurrentLineNumber)
        self.kinds.append(_KEPT)
        self.items.append(kept)
        return kept

    def _line(self) -> int:
        """The line of the layer whose start tag is being read (from `_layer_lines`)."""
        index = self.layers_read
        if index >= len(self.lines):
            raise Unread()
        self.layers_read = index + 1
        return self.lines[index]

    def _net_version(self, attrib: dict[str, str]) -> None:
        version = ir_version(attrib.get("version"))
        if version is None:
            raise Unread()
        self.ctx.ir_version = version

    def _graph_part(self, kind: int, tag: str, attrib: dict[str, str]) -> None:
        graph = self.items[-1]
        if tag in graph.kept:
            raise Unread()
        if tag == "layers" or tag == "edges":
            graph.kept[tag] = None
            self.kinds.append(_LAYERS if tag == "layers" else _EDGES)
            self.items.append(graph)
        elif tag == "rt_info" or (kind == _NET and tag in _NET_KEPT):
            graph.kept[tag] = self._open_kept(tag, attrib)  # (a body's rt_info is written, and never read)
        else:
            raise Unread()

    def _layer_part(self, tag: str, attrib: dict[str, str], parts: dict[str, Any]) -> None:
        """A child of `<layer>` other than `<data>`, noted in `parts` (the layer's children so far)."""
        layer = self.items[-1]
        if tag == "input" or tag == "output":
            parts[tag] = None
            self.kinds.append(_PORTS)
            self.items.append(layer.inputs if tag == "input" else layer.outputs)
        elif tag in BODY_TAGS:
            if self.ctx.body_depth >= self.body_limit:
                raise Unread()
            self.ctx.body_depth += 1
            parts[tag] = None
            self.kinds.append(_BODY)
            self.items.append(_Graph())
        elif tag == "rt_info" or tag == "back_edges" or tag in _PORT_MAP_TAGS:
            parts[tag] = self._open_kept(tag, attrib)
        else:
            raise Unread()

    # --- elements closing ------------------------------------------------------------------

    def end(self, tag: str) -> None:
        if self.leaf is not None:
            if self.leaf == "dim":
                self._dim()
            self.leaf = None
            return
        kind = self.kinds.pop()
        item = self.items.pop()
        if kind == _PORT:
            self._port()
        elif kind == _LAYER:
            self.items[-1].layers.append(self._layer(item))
        elif kind == _BODY:
            self.ctx.body_depth -= 1
            self.items[-1].bodies[tag] = Graph.model_construct(layers=item.layers, edges=item.edges)
        elif kind == _NET:
            self._net(item)

    def _dim(self) -> None:
        self.parser.CharacterDataHandler = None
        chunks = self.chunks
        if len(chunks) != 1:
            raise Unread()  # an empty <dim/>, or text the tree reader would cut at a comment
        text = chunks[0]
        if not is_plain_number(text):
            raise Unread()
        value = int(text)
        if value < -1:
            raise Unread()
        self.dims.append(value)

    def _port(self) -> None:
        attrib, ctx = self.port_attrib, self.ctx
        port_id = small_decimal(attrib.get("id"))
        if port_id is None:
            raise Unread()
        text = attrib.get("precision")
        precision = None if text is None else ElementType.from_precision(text)  # ValueError: the tree reader says why
        self.items[-1].append(make_port(ctx, port_id, precision, attrib.get("names"), self.dims, self.port_rt_info))

    def _layer(self, layer: _Layer) -> Any:
        attrib, parts, ctx = layer.attrib, layer.parts, self.ctx
        layer_id = small_decimal(attrib.get("id"))
        if layer_id is None or "name" not in attrib or "type" not in attrib or "version" not in attrib:
            raise Unread()
        bodies = {}
        if layer.bodies:
            for body_tag, map_tag in BODY_TAGS.items():
                graph = layer.bodies.get(body_tag)
                if graph is not None:
                    bodies[body_tag] = assemble_body(ctx, graph, parts.get(map_tag), parts.get("back_edges"))
        # expat gives each element a dict of its own: the data's is the layer's attrs as it is
        return make_layer(ctx, layer_id, attrib, parts.get("data") or {}, layer.inputs, layer.outputs, bodies,
                          parts.get("rt_info"), layer.line)

    def _net(self, graph: _Graph) -> None:
        rt_node = graph.kept.get("rt_info") or graph.kept.get("meta_data")  # rt_info, else the older meta_data
        self.model = self.ctx.model_class.model_construct(
            layers=graph.layers, edges=graph.edges, name=self.net_attrib.get("name", ""),
            ir_version=self.ctx.ir_version, rt_info=read_rt_info(rt_node, self.ctx.source))
