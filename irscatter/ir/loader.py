"""Reading IR files (`model.xml` + `model.bin`) and bare `<layer>` snippets into the graph.

Parsing is deliberately strict about structure (mandatory attributes, integer ids, dims of
at least -1) and refuses anything that could make the parser itself misbehave: lxml runs
with entity resolution, DTD loading and network access off, and any document that declares
a DOCTYPE or entities is rejected with a `SecurityError` before its content is looked at.
A `<net>` document is read by the event reader (`irscatter.ir.events`) when it can, and
by the tree reader here otherwise; the tree reader writes every message about a defect.
Rules about how the graph fits together (dangling edges, duplicate ids, cycles) are the
job of the wiring pass and the checks (`irscatter.ir.topology`, `irscatter.checks`), so that `validate` can report all of them at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import mmap
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from lxml import etree

from irscatter.errors import FileAccessError, LoadError, SecurityError, UsageError, elide
from irscatter.ir import events, opsets
from irscatter.ir.building import (
    ReadContext,
    first_child,
    ir_version,
    parse_layer_element,
    read_graph,
    read_rt_info,
    remembered,
    tag_of,
)
from irscatter.ir.element_types import ElementType, decode
from irscatter.ir.files import WeightsFile, read_stream, require_regular
from irscatter.ir.graph import Graph, Layer, Model, gc_paused
from irscatter.ir.shapes import MAX_DIGITS, is_decimal, parse_static_shape, read_count
from irscatter.limits import current as current_limits
from irscatter.limits import tensor_size_problem

# The plain reader's expressions are possessive (`*+`), which Python 3.11 brought; on 3.10 the
# event reader reads every document.
if sys.version_info >= (3, 11):
    from irscatter.ir import plain

    READERS = (plain, events)  # each module's read_net, in turn
else:
    READERS = (events,)

# --- secure XML ---------------------------------------------------------------------------


class _DoctypeSeen(Exception):
    """Raised by the sentry at a DOCTYPE."""


class _RootReached(Exception):
    """Raised by the sentry at the root element: the prologue held no DOCTYPE."""


class _Sentry:
    """A parser target that stops at the first DOCTYPE or at the root element, whichever
    comes first. libxml2 reports the DOCTYPE before it reads any entity declaration, so a
    hostile internal subset is refused before it is expanded or even parsed."""

    def doctype(self, name, public_id, system_url):
        raise _DoctypeSeen(name)

    def start(self, tag, attrib):
        raise _RootReached()

    def end(self, tag):
        return None

    def data(self, text):
        return None

    def close(self):
        return None


def _parser(**options: Any) -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_blank_text=True,
        collect_ids=False,
        **options,
    )


_SENTRY_PIECE = 1 << 16


def _count_byte(data: bytes, byte: bytes) -> int:
    """How often `byte` occurs in `data`: numpy counts a large document's bytes several times
    as fast as `bytes.count`."""
    return int(np.count_nonzero(np.frombuffer(data, np.uint8) == ord(byte)))


def _declares_doctype(data: bytes) -> bool:
    """Whether the prologue declares a DOCTYPE. The sentry stops at the root element, but handed
    the whole document libxml2 went on scanning all of it, so it is first fed the document
    piece by piece. The push parser reads fewer encodings (not UTF-32): unless it reached the
    root or a DOCTYPE, the whole document is handed over after all."""
    try:
        sentry = _parser(target=_Sentry())
        for start in range(0, len(data), _SENTRY_PIECE):
            sentry.feed(data[start:start + _SENTRY_PIECE])
        sentry.close()
    except _RootReached:
        return False
    except _DoctypeSeen:
        return True
    except etree.XMLSyntaxError:
        pass
    try:
        # Reaching the root means there was no DOCTYPE; a syntax error is reported by the full parse.
        with contextlib.suppress(_RootReached, etree.XMLSyntaxError):
            etree.fromstring(data, _parser(target=_Sentry()))
    except _DoctypeSeen:
        return True
    return False


def parse_xml(data: bytes, source: str) -> etree._Element:
    """Parse XML bytes safely; returns the root element or raises LoadError/SecurityError.

    The sentry pass refuses any DOCTYPE before its subset is parsed; after it, the document
    has no DTD, so an entity reference can only be a parse error of the full parse. The
    document's size, element count and nesting depth are held to `irscatter.limits`.
    """
    _check_document(data, source)
    return _parse_tree(data, source)


def _check_document(data: bytes, source: str) -> None:
    """What is refused before either reader parses a document: its size, far more markup than
    the element limit allows, and a DOCTYPE."""
    limits = current_limits()
    if len(data) > limits.xml_bytes:
        raise SecurityError(f"the document has {len(data)} bytes, over the limit of {limits.xml_bytes} "
                            "(irscatter.limits: xml_bytes)", file=source, label="xml-size")
    # Every element opens with "<" (and most close with one): far more markup than the
    # element limit allows is refused before a tree that large is built.
    if _count_byte(data, b"<") > 2 * limits.xml_elements + 16:
        raise SecurityError(f"the document has more than {limits.xml_elements} elements "
                            "(irscatter.limits: xml_elements)", file=source, label="xml-elements")
    if _declares_doctype(data):
        raise SecurityError(
            "DOCTYPE declarations are refused (entities and external DTDs are never loaded)", file=source,
            label="doctype",
        )


def _parse_tree(data: bytes, source: str) -> etree._Element:
    limits = current_limits()
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as e:
        line, column = e.position if e.position else (None, None)
        raise LoadError(f"malformed XML: {e.msg}", file=source, line=line, column=column,
                        label="xml-malformed") from None
    if root is None:
        raise LoadError("the file holds no XML element", file=source, label="xml-malformed")
    # Both counted by libxml2's XPath engine, in C. An element takes at least 4 characters
    # ("<a/>"), each at least a byte in any encoding: a smaller document cannot hold too many.
    if len(data) // 4 > limits.xml_elements and root.xpath("count(//*)") > limits.xml_elements:
        raise SecurityError(f"the document has more than {limits.xml_elements} elements "
                            "(irscatter.limits: xml_elements)", file=source, label="xml-elements")
    if root.xpath("boolean(/*" + "/*" * limits.xml_depth + ")"):
        raise SecurityError(f"elements are nested more than {limits.xml_depth} deep "
                            "(irscatter.limits: xml_depth)", file=source, label="xml-depth")
    return root


# --- weights --------------------------------------------------------------------------------


class ConstData:
    """The bytes of one Const inside the weights buffer; decoded on first use, then cached.
    `file`: the weights file the buffer maps, when it is one."""

    __slots__ = ("buffer", "offset", "size", "etype", "shape", "file", "_value", "_view")

    def __init__(self, buffer: np.ndarray, offset: int, size: int, etype: ElementType, shape: tuple[int, ...]):
        self.buffer, self.offset, self.size, self.etype, self.shape = buffer, offset, size, etype, shape
        self.file: WeightsFile | None = None
        self._value: np.ndarray | None = None
        self._view: np.ndarray | None = None

    def raw(self) -> np.ndarray:
        """The Const's bytes as the weights hold them (a read-only view: packed types stay packed)."""
        nbytes = self.size if self.etype is ElementType.string else self.etype.nbytes(math.prod(self.shape))
        return self.buffer[self.offset : self.offset + nbytes]

    def value(self, aligned: bool = True) -> np.ndarray:
        """The decoded array, read-only: a view of the weights where their offset suits the
        element type, else a copy made once. numpy's matmul, and its ufuncs, take a slow path
        on every run for a misaligned array (matmul leaves BLAS), and writers of IR put
        weights at any byte offset. Not `aligned`: the view wherever it lies (for readers
        that take misaligned arrays at full speed), unless the copy is made already."""
        if not aligned and self._value is None:
            if self._view is None:
                view = decode(self.raw(), self.etype, self.shape)
                view.flags.writeable = False
                self._view = view
            return self._view
        if self._value is None:
            value = decode(self.raw(), self.etype, self.shape)
            if not value.flags.aligned:
                value = self._aligned(value)
                if self._view is not None and self.file is not None:  # (its pages were read: let them go)
                    self.file.release(self.offset, self.size)
            value.flags.writeable = False  # one array for every run: no kernel or caller may write it
            self._value = value
        return self._value

    def _aligned(self, value: np.ndarray) -> np.ndarray:
        """`value`, a misaligned view of the weights, at an aligned address. From a file, its
        bytes are read into memory of their own (`WeightsFile.read_into`): the mapped pages of
        the weights are then never touched, so they take no memory besides the copy, and the
        kernel copies from its cache without a page fault per mapped page; else copied."""
        if self.file is not None and self.file.reads_into and not self.etype.is_packed \
                and self.etype is not ElementType.string and self.size >= POPULATED_COPY_BYTES:
            target = np.empty(self.size, np.uint8)
            if self.file.read_into(self.offset, target):
                read = decode(target, self.etype, self.shape)
                if read.flags.aligned:
                    return read
        return aligned_copy(value)


# Copies of at least this many bytes get memory of their own whose pages are made present at
# once: an mmap system call costs more than a small copy.
POPULATED_COPY_BYTES = 1 << 20


def aligned_copy(value: np.ndarray) -> np.ndarray:
    """A copy of `value` at an aligned address. A large one goes to an anonymous mapping that the
    kernel fills with pages in one call (MAP_POPULATE, where the system has it), not one page
    fault at a time as the copy first writes each page: a fault costs several times the copy of
    its page, and a writer of IR leaves weights misaligned as often as not."""
    populate = getattr(mmap, "MAP_POPULATE", None)
    if value.nbytes < POPULATED_COPY_BYTES or populate is None or value.dtype.hasobject:
        return value.copy()
    try:
        memory = mmap.mmap(-1, value.nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
    except OSError:  # (no memory to map at once: the plain copy will say so in numpy's words)
        return value.copy()
    out = np.frombuffer(memory, dtype=value.dtype).reshape(value.shape)
    np.copyto(out, value)
    return out


def _open_weights(path: Path) -> tuple[np.ndarray, WeightsFile | None]:
    """Memory-map the `.bin` read-only: Const arrays become views, nothing is read up front.
    The file as it was mapped is what the model runs on (`WeightsFile`)."""
    try:
        f = open(path, "rb")  # noqa: SIM115  (kept open by the WeightsFile, to ask it whether it changed)
    except OSError as e:
        raise FileAccessError(f"cannot read weights: {e.strerror}", file=str(path)) from None
    try:
        if os.fstat(f.fileno()).st_size == 0:
            f.close()
            return np.empty(0, np.uint8), None
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        f.close()
        raise FileAccessError(f"cannot read weights: {e.strerror}", file=str(path)) from None
    return np.frombuffer(mm, dtype=np.uint8), WeightsFile(path, f, mm)


def _attach_constants(ctx: ReadContext, graph: Graph, weights: np.ndarray | None, bin_label: str,
                      file: WeightsFile | None = None) -> None:
    for layer in graph.layers:
        for body in layer.bodies.values():
            _attach_constants(ctx, body.graph, weights, bin_label, file)
        if layer.type == "Const":
            try:
                layer._const = data = _const_data(ctx, layer, weights, bin_label)
            except LoadError as err:
                ctx.recover(err)  # validation: the constant stays without data
            else:
                data.file = file


def _const_data(ctx: ReadContext, layer: Layer, weights: np.ndarray | None, bin_label: str) -> ConstData:
    data = _plain_const(layer.attrs, weights)
    return data if data is not None else _explained_const(ctx, layer, weights, bin_label)


def _plain_const(a: dict[str, str], weights: np.ndarray | None) -> ConstData | None:
    """A Const whose attributes and weights are all in order, in few steps; None for anything
    else, which `_explained_const` goes through again for its message."""
    try:
        kind = _const_kind(a["element_type"], a["shape"], a["size"])
        offset_text = a["offset"]
    except (KeyError, ValueError):
        return None
    if kind is None or weights is None or not is_decimal(offset_text) or len(offset_text) > MAX_DIGITS:
        return None
    etype, shape, size = kind
    offset = int(offset_text)
    if offset + size > len(weights):
        return None
    return ConstData(weights, offset, size, etype, shape)


# Models repeat a few element types and shapes over thousands of Consts: each text is parsed once.
_CONST_KINDS: dict[tuple[str, str, str], tuple[ElementType, tuple[int, ...], int] | None] = {}


def _const_kind(type_text: str, shape_text: str, size_text: str) -> tuple[ElementType, tuple[int, ...], int] | None:
    """The element type, shape and size of a Const whose three attributes agree, with a size
    in bytes that fits its values; None sends it to `_explained_const`. ValueError: a type or
    shape that does not parse."""
    key = (type_text, shape_text, size_text)
    if key in _CONST_KINDS:
        return _CONST_KINDS[key]
    etype, shape = ElementType.from_attribute(type_text), parse_static_shape(shape_text)
    kind = None
    if (etype is not ElementType.dynamic and etype is not ElementType.string and is_decimal(size_text)
            and len(size_text) <= MAX_DIGITS):
        size, count = int(size_text), math.prod(shape)
        if size == etype.nbytes(count) and not (count == 0 and len(shape) > 1):  # (an empty shape's other dims are checked there)
            kind = (etype, shape, size)
    return remembered(_CONST_KINDS, key, kind)


def _explained_const(ctx: ReadContext, layer: Layer, weights: np.ndarray | None, bin_label: str) -> ConstData:
    def const_error(message: str, label: str) -> LoadError:
        return LoadError(message, file=ctx.source, line=layer.line, layer=layer.ref, label=label)

    a = layer.attrs
    missing = [k for k in ("element_type", "shape", "offset", "size") if k not in a]
    if missing:
        raise const_error("<data> is missing " + ", ".join(f'"{k}"' for k in missing), "const-attribute")
    try:
        etype = ElementType.from_attribute(a["element_type"])
        shape = parse_static_shape(a["shape"])
    except ValueError as e:
        raise const_error(str(e), "const-attribute") from None
    if etype is ElementType.dynamic:
        raise const_error("a constant cannot have element type dynamic", "const-attribute")
    if math.prod(shape) == 0 and (problem := tensor_size_problem(shape, etype.bitwidth / 8)) is not None:
        raise const_error(problem, "tensor-limit")  # no bytes to check it by: its other dims may be past numpy's reach
    for key in ("offset", "size"):
        if not is_decimal(a[key].strip()):
            raise const_error(f'{key}="{elide(a[key])}" is not a non-negative integer', "const-attribute")
    try:
        offset, size = read_count(a["offset"].strip(), "offset"), read_count(a["size"].strip(), "size")
    except ValueError as e:  # a number past any file's size: the weights lie past its end
        raise const_error(f"{e}: the weights lie past the end of {bin_label}", "const-range") from None
    count = math.prod(shape)
    if weights is None:
        raise const_error(f"needs {size} bytes at offset {offset} but there is no weights file ({bin_label})", "no-weights")
    real = len(weights)
    if etype is not ElementType.string:
        expected = etype.nbytes(count)
        if count == 0:
            # OpenVINO's serializer writes an empty constant as one byte, and reads it back: it
            # holds no value, so its size says nothing (past the end of the file is still refused).
            if offset + size <= real:
                return ConstData(weights, offset, 0, etype, shape)
        elif size != expected:
            raise const_error(f"size={size} bytes at offset {offset} does not match {etype.value} "
                       f"{list(shape)}, which needs {expected} bytes ({bin_label} has {real} bytes)", "const-size")
    if offset + size > real:
        raise const_error(f"weights [offset {offset}, size {size}] end at byte {offset + size}, "
                   f"past the end of {bin_label}, which has {real} bytes", "const-range")
    return ConstData(weights, offset, size, etype, shape)


# --- entry points ---------------------------------------------------------------------------


def _net_model(ctx: ReadContext, root: etree._Element) -> Model:
    if tag_of(root).lower() != "net":
        raise ctx.error(f"the root element is <{tag_of(root)}>, expected <net>", root, label="net-root")
    version_text = root.get("version")
    if version_text is None:
        ctx.recover(ctx.error("<net> has no version attribute (IR v10 or v11 expected)", root, label="net-version"))
    elif (version := ir_version(version_text)) is None:
        ctx.recover(ctx.error(f'<net version="{elide(version_text)}"> is not supported (IR v10 and v11 are)', root,
                              label="net-version"))
    else:
        ctx.ir_version = version  # validation of a bad version goes on as v11
    _check_layers_placed(ctx, root)
    rt_node = first_child(root, "rt_info")
    rt = read_rt_info(rt_node if rt_node is not None else first_child(root, "meta_data"), ctx.source)
    model = read_graph(ctx, root, ctx.model_class, name=root.get("name", ""), ir_version=ctx.ir_version, rt_info=rt)
    return model  # type: ignore[return-value]  # (an instance of ctx.model_class, a Model)


# A layer stands in the <layers> of the model or of a body; what rt_info (and what an IR v10 net
# holds beside the graph) holds is free-form.
_MISPLACED_LAYERS = etree.XPath("//layer[not(parent::layers[parent::net or parent::body or parent::then_body "
                                "or parent::else_body])][not(ancestor::rt_info or ancestor::meta_data "
                                "or ancestor::pre-process or ancestor::statistics)]")


def _check_layers_placed(ctx: ReadContext, root: etree._Element) -> None:
    """A <layer> anywhere else was never read, and nothing said so."""
    for node in _MISPLACED_LAYERS(root):
        ctx.recover(ctx.error(f"<layer> inside <{node.getparent().tag}>: a layer stands in <layers> (of the "
                              f"<net> or of a body), and is not read anywhere else", node,
                              label="misplaced-element"))


def _read_net(ctx: ReadContext, data: bytes) -> Model:
    """The model of a `<net>` document: read by the plain reader, else by the event reader, or by
    the tree reader when both leave it (or when every defect is to be collected, which only the
    tree reader does)."""
    _check_document(data, ctx.source)
    if ctx.problems is None:
        for reader in READERS:
            attempt = ReadContext(ctx.source, model_class=ctx.model_class, progress=ctx.progress)
            with contextlib.suppress(events.Unread):
                model = reader.read_net(data, attempt)
                ctx.ir_version = attempt.ir_version
                return model
    return _net_model(ctx, _parse_tree(data, ctx.source))


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        size = path.stat().st_size
        limit = current_limits().xml_bytes
        if size > limit:  # refused before a byte is read
            raise SecurityError(f"the {what} has {size} bytes, over the limit of {limit} (irscatter.limits: xml_bytes)",
                                file=str(path), label="xml-size")
        data = read_stream(path, what, limit + 1)  # (a device or a pipe has no size to ask)
        if len(data) > limit:
            raise SecurityError(f"the {what} holds more than {limit} bytes, the limit (irscatter.limits: xml_bytes)",
                                file=str(path), label="xml-size")
        return data
    except FileNotFoundError:
        raise FileAccessError(f"{what} not found", file=str(path)) from None
    except IsADirectoryError:
        raise FileAccessError(f"{what} is a directory", file=str(path)) from None
    except OSError as e:
        raise FileAccessError(f"cannot read {what}: {e.strerror}", file=str(path)) from None


# A parse tree holds some ten small C allocations per element. Once freed, the C heap keeps
# their pages, interleaved with the graph's objects, until told to give back what it can:
# for a model of 20000 layers, 88 MB of the 173 MB resident growth, in 3 ms.
_LARGE_DOCUMENT = 1 << 20


@functools.cache
def _malloc_trim() -> Any:
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS, Windows)."""
    try:
        return ctypes.CDLL(None).malloc_trim  # the symbols the process has loaded, libc's among them
    except (OSError, AttributeError, TypeError):
        return None


def _return_freed_heap() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def read_model(xml_path: str | bytes | os.PathLike, bin_path: str | os.PathLike | None = None, *,
               model_class: type[Model] = Model, progress: Callable[[int, int], None] | None = None) -> Model:
    """Load an IR model. The `.bin` defaults to the xml's sibling with the `.bin` suffix.

    A missing default `.bin` is only an error if a Const needs it; a `bin_path` given
    explicitly must exist. `model_class` is the (sub)class of Model to build; `progress(read,
    total)` hears how far the reading of the document has come.
    """
    with gc_paused():
        xml_path = model_file(xml_path)
        return _read(ReadContext(str(xml_path), model_class=model_class, progress=progress), xml_path, bin_path)


def read_model_collecting(xml_path: str | os.PathLike,
                          bin_path: str | os.PathLike | None = None) -> tuple[Model, list[LoadError]]:
    """Load what can be loaded, with every defect confined to one element returned as a
    list instead of raised (the document as a whole must still parse as a `<net>`)."""
    problems: list[LoadError] = []
    xml_path = model_file(xml_path)
    return _read(ReadContext(str(xml_path), problems=problems), xml_path, bin_path), problems


def model_file(given: Any) -> Path:
    """The `.xml` a model path names: the file itself, or in a folder its `model.xml`, else its
    only `.xml` file (as a folder of OpenVINO's converter output holds one model)."""
    path = _path(given, "model file")
    if not path.is_dir():
        return path
    if (path / "model.xml").is_file():
        return path / "model.xml"
    found = sorted(p.name for p in path.glob("*.xml") if p.is_file())
    if len(found) == 1:
        return path / found[0]
    what = "no .xml file" if not found else f"{len(found)} .xml files ({', '.join(found[:4])}{', ...' if len(found) > 4 else ''})"
    raise FileAccessError(f"the folder holds {what}: name the model's .xml", file=str(path))


def _path(value: Any, what: str) -> Path:
    """A path the caller gave: str, bytes or os.PathLike (anything else is a usage error)."""
    try:
        return Path(os.fsdecode(value))
    except TypeError:
        raise UsageError(f"the {what} must be a path (str, bytes or os.PathLike), not {type(value).__name__}") from None


def _document(value: Any, what: str) -> bytes:
    """An XML document the caller gave in memory: str or bytes (anything else is a usage error,
    as a path of the wrong type is)."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise UsageError(f"the {what} must be XML text (str or bytes), not {type(value).__name__}")


def _read(ctx: ReadContext, xml_path: str | os.PathLike, bin_path: str | os.PathLike | None) -> Model:
    xml = _path(xml_path, "model file")
    text = _read_bytes(xml, "model file")
    model = _read_net(ctx, text)
    if len(text) >= _LARGE_DOCUMENT:
        _return_freed_heap()  # the parse tree is gone: half the resident growth of a large load
    model.xml_path = str(xml)
    weights_path = _path(bin_path, "weights file") if bin_path is not None else xml.with_suffix(".bin")
    weights = mm = None
    if bin_path is not None or weights_path.exists():
        require_regular(weights_path, "weights file", "it is memory-mapped")
        weights, mm = _open_weights(weights_path)
        model.bin_path = str(weights_path)
        model.bin_size = len(weights)
    _attach_constants(ctx, model, weights, weights_path.name, mm)
    model._weights = mm
    return model


def parse_model(xml: bytes | str, weights: bytes | np.ndarray | None = None, *, source: str = "<memory>",
                model_class: type[Model] = Model) -> Model:
    """Load an IR model from memory (`weights` are the `.bin` bytes)."""
    data = _document(xml, "model document")
    if weights is not None and not isinstance(weights, (bytes, bytearray, np.ndarray)):
        raise UsageError(f"the weights must be bytes or a numpy array, not {type(weights).__name__}")
    ctx = ReadContext(source, model_class=model_class)
    model = _read_net(ctx, data)
    buf = None if weights is None else np.frombuffer(weights, np.uint8) if isinstance(weights, (bytes, bytearray)) else weights
    if buf is not None:
        model.bin_size = len(buf)
    _attach_constants(ctx, model, buf, "the weights")
    return model


def parse_layer(xml: bytes | str, *, source: str = "<memory>") -> Layer:
    """Parse a bare `<layer>` element, as the op specifications show them. The spec's snippets
    often leave out what a model file must have: a missing `id` is 0, a missing `name` is the
    type, and a missing `version` is the newest opset that holds the type."""
    data = _document(xml, "layer")
    ctx = ReadContext(source)
    root = parse_xml(data, source)
    if root.tag != "layer":
        raise ctx.error(f"expected a <layer> element, found <{tag_of(root)}>", root)
    if type_name := root.get("type"):
        for key, default in (("id", "0"), ("name", type_name), ("version", opsets.newest_opset_holding(type_name))):
            if root.get(key) is None:
                root.set(key, default)
    return parse_layer_element(ctx, root)
