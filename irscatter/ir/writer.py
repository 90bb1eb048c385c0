"""Writing IR: a new `model.xml` + `model.bin` built from layers of a loaded graph.

The graph keeps every layer as written (raw attributes, port ids, bodies), so a layer can be
copied into a new network as it stands; what changes is its id, where its inputs come from,
and the declared dims and precisions of its ports, which the writer takes from values the
caller knows (irscatter's own results). New boundaries are made as needed: a Parameter for a
tensor the new network is fed, a Const for a value it carries in its weights, a Result for a
tensor it returns. Const values, also those inside bodies, are written into a fresh `.bin`.
A layer that no graph holds yet (a test's layer under test, a generator's op of an opset
OpenVINO cannot write) is made from its type, attributes and port types (`layer`), a body of
one from a `region` of the same network.

What comes out is IR v11 as OpenVINO's serializer writes it, so that OpenVINO reads it back,
`<rt_info>` included (the model's: runtime options a compiled model applies, the framework's
version; a layer's and a port's: a Parameter's layout, fused names), written back from what the
loader read: a layer's or port's entries as `<attribute name=...>` elements with their fields,
the model's as elements named by their keys (or `<info name=... value=...>` where a key is no
XML name). `with_layer_rt_info` instead adds rt_info entries to layers of an existing document,
leaving the rest of it (and its weights) as they are.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from irscatter.ir.element_types import ElementType, encode
from irscatter.ir.graph import Body, Graph, Layer, Port, RtInfo
from irscatter.ir.loader import parse_xml
from irscatter.ir.shapes import PartialShape

# A port's declared element type and shape; None for either leaves it undeclared (dynamic).
PortType = tuple[ElementType | None, tuple[int, ...] | None]


@dataclass(frozen=True)
class Tensor:
    """A tensor of the network being written: the producing layer's new id and its output port id."""

    layer: int
    port: int


@dataclass
class IRWriter:
    """A network written layer by layer; `save(path)` writes the `.xml` and its `.bin`."""

    name: str = "model"
    rt_info: RtInfo = field(default_factory=dict)  # the model's own
    _layers: etree._Element = field(init=False)
    _edges: list[tuple[int, int, int, int]] = field(default_factory=list)
    _weights: bytearray = field(default_factory=bytearray)
    _next_id: int = 0

    def __post_init__(self) -> None:
        self._layers = etree.Element("layers")

    # --- boundaries ---------------------------------------------------------------------------

    def parameter(self, name: str, etype: ElementType, shape: tuple[int, ...] | PartialShape | None,
                  tensor_names: tuple[str, ...] = (), *, rt_info: RtInfo | None = None,
                  port_rt_info: RtInfo | None = None) -> Tensor:
        """A network input; `shape` None is a dynamic rank, a -1 dim a dynamic dim. A
        PartialShape keeps its bounds ("1..8") in the layer's shape; its port says -1 for them.
        `rt_info` and `port_rt_info` are an original Parameter's (its layout, say)."""
        if isinstance(shape, PartialShape):
            text = "..." if not shape.rank_is_static else ",".join(str(d) for d in shape.ranked_dims)
            dims = None if not shape.rank_is_static else [d.min if d.is_static else -1 for d in shape.ranked_dims]
        else:
            dims = None if shape is None else list(shape)
            text = "..." if dims is None else ",".join("?" if d < 0 else str(d) for d in dims)
        node, layer_id = self._layer_element(name, "Parameter", "opset1", {"shape": text, "element_type": etype.value},
                                   rt_info=rt_info)
        self._ports(node, "output", [(0, etype, dims, tensor_names, port_rt_info)])
        return Tensor(layer_id, 0)

    def const(self, name: str, value: np.ndarray, etype: ElementType | None = None,
              tensor_names: tuple[str, ...] = ()) -> Tensor:
        """A value carried in the weights."""
        value = np.asarray(value)
        etype = etype or ElementType.from_dtype(value.dtype)
        offset, size = self._store(value, etype)
        node, layer_id = self._layer_element(name, "Const", "opset1", {
            "element_type": etype.value, "shape": ",".join(map(str, value.shape)),
            "offset": str(offset), "size": str(size)})
        self._ports(node, "output", [(0, etype, list(value.shape), tensor_names, None)])
        return Tensor(layer_id, 0)

    def result(self, name: str, source: Tensor, etype: ElementType | None, shape: tuple[int, ...] | None) -> int:
        """A network output fed by `source`; returns the Result's id."""
        node, layer_id = self._layer_element(name, "Result", "opset1", {})
        self._ports(node, "input", [(0, etype, None if shape is None else list(shape), (), None)])
        self._edges.append((source.layer, source.port, layer_id, 0))
        return layer_id

    # --- copied layers ------------------------------------------------------------------------

    def copy(self, layer: Layer, sources: Sequence[Tensor | None],
             input_types: Sequence[tuple[ElementType | None, tuple[int, ...] | None]],
             output_types: Sequence[tuple[ElementType | None, tuple[int, ...] | None]], *,
             name: str | None = None, output_names: list[tuple[str, ...]] | None = None) -> list[Tensor]:
        """`layer` as written, fed by `sources` (one per input port, in port order; None leaves
        a port unconnected), its ports declared with the given (element type, shape) pairs;
        returns its outputs in port order. `output_names` replaces the tensor names of its
        output ports (a runtime reports an output by them)."""
        node, new_id = self._layer_element(name or layer.name, layer.type, layer.version, layer.attrs, extra=layer.extra,
                                   rt_info=layer.rt_info)
        self._ports(node, "input", [(p.id, et, None if sh is None else list(sh), (), p.rt_info)
                                    for p, (et, sh) in zip(layer.inputs, input_types)])
        names = output_names or [p.names for p in layer.outputs]
        self._ports(node, "output", [(p.id, et, None if sh is None else list(sh), n, p.rt_info)
                                     for p, (et, sh), n in zip(layer.outputs, output_types, names)])
        for tag, body in layer.bodies.items():
            self._body(node, tag, body)
        for port, source in zip(layer.inputs, sources):
            if source is not None:
                self._edges.append((source.layer, source.port, new_id, port.id))
        return [Tensor(new_id, p.id) for p in layer.outputs]

    # --- new layers ---------------------------------------------------------------------------

    def layer(self, type_name: str, version: str, sources: Sequence[Tensor | None],
              input_types: Sequence[PortType], output_types: Sequence[PortType], *, name: str,
              attrs: Mapping[str, str] | None = None, output_names: Sequence[tuple[str, ...]] = (),
              children: Sequence[etree._Element] = ()) -> list[Tensor]:
        """A layer made here rather than copied: `attrs` are its `<data>` as written, its input
        ports numbered from 0 and its outputs after them (as OpenVINO numbers them), declared
        with the given (element type, shape) pairs and fed by `sources` (None leaves a port
        unconnected). `children` are appended as given after the ports: a `<body>` made by
        `region().body()`, say. Returns its outputs in port order."""
        node, new_id = self._layer_element(name, type_name, version, dict(attrs or {}))
        count = len(input_types)
        self._ports(node, "input", [(k, et, None if sh is None else list(sh), (), None)
                                    for k, (et, sh) in enumerate(input_types)])
        names = list(output_names) + [()] * (len(output_types) - len(output_names))
        self._ports(node, "output", [(count + k, et, None if sh is None else list(sh), n, None)
                                     for k, ((et, sh), n) in enumerate(zip(output_types, names))])
        node.extend(children)
        for k, source in enumerate(sources):
            if source is not None:
                self._edges.append((source.layer, source.port, new_id, k))
        return [Tensor(new_id, count + k) for k in range(len(output_types))]

    def region(self) -> IRWriter:
        """A writer for the body of a layer of this network: its own layer ids, from 0, and this
        network's weights, so that Consts inside the body land in the one `.bin`."""
        sub = IRWriter(self.name)
        sub._weights = self._weights
        return sub

    def body(self, tag: str = "body") -> etree._Element:
        """This writer's layers and edges as a body element (`<body>`, `<then_body>`, ...) for
        `layer(children=...)`; a region combines scalars, a sub-graph also needs its port map."""
        node = etree.Element(tag)
        layers = etree.SubElement(node, "layers")
        layers.extend(deepcopy(child) for child in self._layers)
        self._edge_elements(node)
        return node

    # --- output -------------------------------------------------------------------------------

    def to_bytes(self, bin_name: str = "model.bin") -> tuple[bytes, bytes]:
        """The `.xml` text and the `.bin` bytes."""
        net = etree.Element("net", name=self.name, version="11")
        net.append(self._layers)
        self._edge_elements(net)
        if self.rt_info:
            _model_entries(etree.SubElement(net, "rt_info"), self.rt_info)
        xml = etree.tostring(net, pretty_print=True, xml_declaration=True, encoding="utf-8")
        net.remove(self._layers)  # the writer may go on adding layers
        return xml, bytes(self._weights)

    def save(self, xml_path: str | os.PathLike) -> Path:
        """Write the `.xml` and, beside it, the `.bin` of the same stem; returns the `.xml` path."""
        path = Path(xml_path)
        xml, weights = self.to_bytes(path.with_suffix(".bin").name)
        path.write_bytes(xml)
        path.with_suffix(".bin").write_bytes(weights)
        return path

    @property
    def layer_count(self) -> int:
        return len(self._layers)

    # --- internals ----------------------------------------------------------------------------

    def _edge_elements(self, parent: etree._Element) -> None:
        edges = etree.SubElement(parent, "edges")
        for fl, fp, tl, tp in self._edges:
            etree.SubElement(edges, "edge", {"from-layer": str(fl), "from-port": str(fp),
                                             "to-layer": str(tl), "to-port": str(tp)})

    def _store(self, value: np.ndarray, etype: ElementType) -> tuple[int, int]:
        data = encode(value, etype)
        # Aligned like OpenVINO's own weights, so that its reader can map them without a copy.
        self._weights.extend(b"\0" * (-len(self._weights) % 64))
        offset = len(self._weights)
        self._weights.extend(data)
        return offset, len(data)

    def _layer_element(self, name: str, type_name: str, version: str, attrs: dict[str, str], *,
                       extra: dict[str, str] | None = None, parent: etree._Element | None = None,
                       layer_id: int | None = None, rt_info: RtInfo | None = None) -> tuple[etree._Element, int]:
        """The `<layer>` element, made in `parent` (by default the network's layers), and its id
        (the next free one unless `layer_id` is given)."""
        if layer_id is None:
            layer_id, self._next_id = self._next_id, self._next_id + 1
        attrib = {"id": str(layer_id), "name": name, "type": type_name, "version": version, **(extra or {})}
        node = etree.SubElement(self._layers if parent is None else parent, "layer", attrib)
        if attrs or type_name in ("Parameter", "Const"):
            etree.SubElement(node, "data", dict(attrs))
        _attributes(node, rt_info)
        return node, layer_id

    @staticmethod
    def _ports(node: etree._Element, tag: str,
               ports: list[tuple[int, ElementType | None, list[int] | None, tuple[str, ...], RtInfo | None]]) -> None:
        if not ports:
            return
        group = etree.SubElement(node, tag)
        for port_id, etype, dims, names, rt_info in ports:
            attrib = {"id": str(port_id)}
            if etype is not None and etype is not ElementType.dynamic:
                attrib["precision"] = etype.precision
            if names:
                attrib["names"] = ",".join(n.replace(",", "\\,") for n in names)
            port = etree.SubElement(group, "port", attrib)
            for d in dims or ():
                etree.SubElement(port, "dim").text = str(d)
            _attributes(port, rt_info)

    def _body(self, owner: etree._Element, tag: str, body: Body) -> None:
        """A body as written, its Consts re-stored in this writer's weights."""
        map_tag = {"body": "port_map", "then_body": "then_port_map", "else_body": "else_port_map"}[tag]
        node = etree.SubElement(owner, tag)
        self._graph(node, body.graph)
        port_map = etree.SubElement(owner, map_tag)
        for direction, entries in (("input", body.inputs), ("output", body.outputs)):
            for entry in entries:
                values = entry.model_dump(exclude_none=True)
                etree.SubElement(port_map, direction, {k: str(v) for k, v in values.items()})
        if body.back_edges:
            back = etree.SubElement(owner, "back_edges")
            for e in body.back_edges:
                etree.SubElement(back, "edge", {"from-layer": str(e.from_layer), "to-layer": str(e.to_layer)})

    def _graph(self, parent: etree._Element, graph: Graph) -> None:
        layers = etree.SubElement(parent, "layers")
        for layer in graph.layers:
            attrs = dict(layer.attrs)
            if layer.type == "Const" and layer.const_data is not None:
                value = layer.const_value
                offset, size = self._store(value, layer.const_data.etype)
                attrs.update(offset=str(offset), size=str(size))
            node, _ = self._layer_element(layer.name, layer.type, layer.version, attrs, extra=layer.extra,
                                       parent=layers, layer_id=layer.id, rt_info=layer.rt_info)
            self._declared_ports(node, "input", layer.inputs)
            self._declared_ports(node, "output", layer.outputs)
            for tag, body in layer.bodies.items():
                self._body(node, tag, body)
        edges = etree.SubElement(parent, "edges")
        for e in graph.edges:
            etree.SubElement(edges, "edge", {"from-layer": str(e.from_layer), "from-port": str(e.from_port),
                                             "to-layer": str(e.to_layer), "to-port": str(e.to_port)})

    def _declared_ports(self, node: etree._Element, tag: str, ports: list[Port]) -> None:
        self._ports(node, tag, [(p.id, p.precision, _dims(p), p.names, p.rt_info) for p in ports])


def with_layer_rt_info(xml: bytes, source: str, entries: Mapping[int, RtInfo]) -> bytes:
    """The document `xml` as it stands, with `entries` (by layer id) added to the `<rt_info>` of
    those layers of its top-level graph (made after `<data>` where a layer has none); an entry a
    layer already has keeps its own fields. Nothing else changes, the weights' offsets included,
    so the new document reads the same `.bin` and means what the old one did (its IR version's
    conventions too), which a copy rebuilt layer by layer would not promise."""
    root = parse_xml(xml, source)
    layers = root.find("layers")
    for node in () if layers is None else layers.iterchildren("layer"):
        added = entries.get(int(node.get("id", "-1")))
        if not added:
            continue
        info = node.find("rt_info")
        if info is None:
            data = node.find("data")
            info = etree.Element("rt_info")
            node.insert(0 if data is None else node.index(data) + 1, info)
        present = {a.get("name") for a in info.iterchildren("attribute")}
        _attribute_entries(info, {k: v for k, v in added.items() if k not in present})
    return etree.tostring(root.getroottree(), pretty_print=True, xml_declaration=True, encoding="utf-8")


_XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


def _attributes(owner: etree._Element, rt_info: RtInfo | None) -> None:
    """A layer's or port's `<rt_info>`: one `<attribute name=...>` per entry, with its fields
    (version, value, layout, ...) or, for an entry of entries, its own `<attribute>` children."""
    if rt_info:
        _attribute_entries(etree.SubElement(owner, "rt_info"), rt_info)


def _attribute_entries(node: etree._Element, entries: dict[str, Any]) -> None:
    for key, value in entries.items():
        if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
            etree.SubElement(node, "attribute", {"name": key, **value})
        elif isinstance(value, dict):
            _attribute_entries(etree.SubElement(node, "attribute", {"name": key}), value)
        else:
            etree.SubElement(node, "attribute", {"name": key, "value": str(value)})


def _model_entries(node: etree._Element, entries: dict[str, Any]) -> None:
    """The model's `<rt_info>`: `<key value=...>` per entry, `<key>` around an entry of entries,
    and `<info name=...>` where a key is no XML name ("OpenVINO Runtime")."""
    for key, value in entries.items():
        named = _XML_NAME.match(key) is not None
        child = etree.SubElement(node, key) if named else etree.SubElement(node, "info", {"name": key})
        if isinstance(value, dict):
            _model_entries(child, value)
        else:
            child.set("value", str(value))


def _dims(port: Port) -> list[int] | None:
    """A port's declared dims as the IR writes them (-1 for a dynamic dim); None for a dynamic rank."""
    shape = port.shape
    if not shape.rank_is_static:
        return None
    return [d.min if d.is_static else -1 for d in shape]
