"""The event reader (irscatter.ir.events) against the tree reader: on every document it reads,
the same graph, lines included; everything else it leaves to the tree reader (`Unread`), which
then reads it, or refuses it with its own message, as if the event reader did not exist."""

import random
from pathlib import Path

import numpy as np
import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter
from test_fuzz import mutated_model

import irscatter
from irscatter import limits
from irscatter.errors import IRError
from irscatter.ir import events, loader
from irscatter.ir.building import ReadContext

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted([*ROOT.glob("models/*/model.xml"), *ROOT.glob("tests/corpus/hostile/*.xml"),
                 *ROOT.glob("tests/data/control/*.xml")])
LIBXML2_LAST_LINE = 65535  # libxml2 counts lines exactly up to here


def _tree(data: bytes):
    ctx = ReadContext("doc.xml")
    return loader._net_model(ctx, loader.parse_xml(data, "doc.xml"))


def _events(data: bytes):
    """The event reader's model, or None where it leaves the document to the tree reader."""
    try:
        loader._check_document(data, "doc.xml")  # (what neither reader is given)
        return events.read_net(data, ReadContext("doc.xml"))
    except (events.Unread, IRError):
        return None


def _layers(model):
    out = []
    for layer in model.layers:
        out.append(layer)
        for body in layer.bodies.values():
            out += _layers(body.as_model())
    return out


def _same_graph(fast, tree) -> None:
    assert fast.model_dump(exclude={"layers"}) == tree.model_dump(exclude={"layers"})
    fast_layers, tree_layers = _layers(fast), _layers(tree)
    as_data = TypeAdapter(irscatter.Layer).dump_python
    assert [as_data(layer, exclude={"line", "bodies"}) for layer in fast_layers] == \
        [as_data(layer, exclude={"line", "bodies"}) for layer in tree_layers]
    # past line 65535 libxml2 gives 65535 or a neighbour's line; the event reader counts on
    assert [layer.line for layer in fast_layers if layer.line < LIBXML2_LAST_LINE] == \
        [layer.line for layer in tree_layers if layer.line < LIBXML2_LAST_LINE]
    assert type(fast) is type(tree)


def _agree(data: bytes) -> bool:
    """Whether the event reader read the document (and then made the tree reader's graph)."""
    try:
        tree = _tree(data)
    except IRError:
        tree = None
    fast = _events(data)
    if fast is None:
        return False
    assert tree is not None, "the event reader read a document the tree reader refuses"
    _same_graph(fast, tree)
    return True


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_both_readers_make_the_same_graph_of_every_corpus_document(path):
    data = path.read_bytes()
    if not path.parent.name == "hostile":
        assert _agree(data), "a well-formed model of the usual elements is the event reader's to read"
    else:
        _agree(data)


def test_the_event_reader_reads_bodies_port_maps_back_edges_and_rt_info():
    read = [p for p in CORPUS if _agree(p.read_bytes()) and b"<back_edges" in p.read_bytes()]
    assert read, "a Loop or TensorIterator with its port map and back edges"
    with_rt_info = [p for p in CORPUS if b"<rt_info" in p.read_bytes() and _agree(p.read_bytes())]
    assert with_rt_info


SMALL = (ROOT / "models" / "affine_chain" / "model.xml").read_bytes()


@pytest.mark.parametrize("change", [
    (b"<dim>", b"<dim><!-- four -->", 1),  # the tree reader's text stops at a comment
    (b"<dim>", b"<dim>4<!-- four -->", 1),
    (b"</layers>", b"<extra/></layers>", 1),  # an element the format does not have
    (b"<layers>", b"<layers><layer/>", 1),  # a layer without its attributes (the tree reader says which)
    (b"<data ", b"<data/><data ", 1),  # a second <data>: the tree reader reads the first
    (b"<input>", b"<input><port id=\"9\"/></input><input>", 1),
    (b"<net ", b"<net xmlns:a=\"u\" ", 1),  # namespaces
    (b"<edge ", b"<edge a:b=\"1\" ", 1),  # an unbound prefix: malformed for libxml2
    (b"version=\"11\"", b"version=\"12\"", 1),
    (b"<edges>", b"<edges><edge from-layer=\"x\"/>", 1),
    (b"<dim>", b"<dim>-2", 1),
    (b"<net", b"<!-- <layer id=\"0\"> --><net", 1),  # the layer lines are found by their tags
    (b"</dim>", b"<x/></dim>", 1),
    (b"<data ", b"<data><x/></data><data_ ", 1),
    (b"<layer ", b"<layer xml:lang=\"en\" ", 1),  # the xml prefix names a namespace too
    (b"<?xml version=\"1.0\"?>", b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>", 1),
    (b"<?xml version=\"1.0\"?>", b"<?xml version=\"1.0\"" + b" " * 300 + b"encoding=\"palmos\"?>", 1),
    (b"<?xml version=\"1.0\"?>", b"<?xml version=\"2.0\"?>", 1),  # expat and libxml2 differ on other versions
])
def test_what_the_event_reader_leaves_to_the_tree_reader(change):
    old, new, count = change
    data = SMALL.replace(old, new, count)
    assert data != SMALL
    assert _events(data) is None
    _agree(data)


def test_what_an_ir_v10_net_holds_beside_the_graph_is_read_alike():
    v10 = (ROOT / "models" / "mixed_types_v10" / "model.xml").read_bytes()
    extra = b'<pre-process reference-layer-name="x"><channel id="0"><mean value="0.5"/></channel></pre-process></net>'
    data = v10.replace(b"</net>", extra, 1)
    assert data != v10 and _agree(data)


def test_documents_not_in_utf8_are_the_tree_readers():
    text = SMALL.decode().replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    data = text.encode("utf-16")
    assert _events(data) is None
    assert _tree(data).model_dump() == _tree(SMALL).model_dump()
    assert _events(text.encode("utf-16-le")) is None  # without a byte order mark
    undeclared = b'<net version="11"/>'.decode().encode("utf-16-le")
    assert _events(undeclared) is None  # expat reads it as UTF-16, libxml2 refuses it
    with pytest.raises(IRError, match="malformed XML"):
        irscatter.parse_model(undeclared)


def test_a_layer_tag_in_a_comment_never_shifts_the_lines():
    for comment in (b'<!-- <layer " -->', b"<!-- <layer '' -->" * 2000, b'<!-- <layer a=">"> -->'):
        data = SMALL.replace(b"<layers>", b"<layers>" + comment + b"\n", 1)
        _agree(data)


def test_a_comment_or_text_past_libxml2s_text_length_is_the_tree_readers():
    data = SMALL.replace(b"<layers>", b"<layers><!--" + b"<x" * 5_000_001 + b"-->", 1)
    assert _events(data) is None
    with pytest.raises(IRError, match="Comment too big"):
        _tree(data)
    data = SMALL.replace(b"<layers>", b"<layers><![CDATA[" + b"<x" * 5_000_001 + b"]]>", 1)
    assert _events(data) is None
    with pytest.raises(IRError, match="too big"):
        _tree(data)


def test_a_start_tag_over_two_lines_with_a_quoted_closing_bracket_has_the_tree_readers_line():
    data = SMALL.replace(b'<layer id="0" name="x"', b'<layer id="0" name="x>y"\n', 1)
    assert data != SMALL
    assert _agree(data)


def test_a_run_of_text_past_libxml2s_name_length_is_the_tree_readers():
    data = SMALL.replace(b"<net ", b"<net note=\"" + b"x" * 50_001 + b"\" ", 1)
    assert _events(data) is None


def test_the_limits_hold_for_the_event_reader_too():
    with limits.using(xml_depth=5):
        with pytest.raises(IRError, match="nested more than 5 deep"):
            irscatter.parse_model(SMALL, (ROOT / "models" / "affine_chain" / "model.bin").read_bytes())
    with limits.using(body_depth=0):
        data = next(p for p in CORPUS if p.parent.name == "control" and b"<body>" in p.read_bytes()).read_bytes()
        assert _events(data) is None
        with pytest.raises(IRError, match="nested more than 0 deep"):
            _tree(data)


def test_past_line_65535_the_event_reader_counts_on():
    data = SMALL.replace(b"<layers>", b"<layers>" + b"<!-- -->\n" * 70_000, 1)
    fast, tree = _events(data), _tree(data)
    assert tree.layers[0].line == LIBXML2_LAST_LINE
    assert fast.layers[0].line == _tree(SMALL).layers[0].line + 70_000


def test_read_model_takes_the_plain_then_the_event_reader_and_validation_the_tree_reader(monkeypatch):
    """(The plain reader is the first on Python 3.11 and later; before, the event reader is.)"""
    calls = []
    for module in loader.READERS:
        real = module.read_net
        monkeypatch.setattr(module, "read_net", lambda *a, module=module, real=real: calls.append(module) or real(*a))
    first = loader.READERS[0]
    irscatter.read_model(ROOT / "models" / "affine_chain" / "model.xml")
    assert calls == [first]
    with_body = next(p for p in CORPUS if p.parent.name == "control" and b"<body>" in p.read_bytes())
    irscatter.read_model(with_body)  # (a body is the event reader's)
    assert calls == [first, *loader.READERS] and calls[-1] is events
    irscatter.validate(ROOT / "models" / "affine_chain" / "model.xml")
    assert calls == [first, *loader.READERS]


_PIECES = [b"<!-- c -->", b"<x/>", b"<layer/>", b"<dim>3</dim>", b"<rt_info/>", b"<port id=\"0\"/>", b"<data/>",
           b"<edge from-layer=\"0\" from-port=\"0\" to-layer=\"1\" to-port=\"0\"/>", b" ", b"&amp;", b"<![CDATA[1]]>",
           b"<?pi x?>", b"\n"]


@st.composite
def _mutated(draw):
    data = bytearray(draw(st.sampled_from([p for p in CORPUS if p.stat().st_size < 20_000])).read_bytes())
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    for _ in range(draw(st.integers(1, 3))):
        at = rng.choice([i for i, b in enumerate(data) if b in b"<>"] or [0])
        what = rng.randrange(4)
        if what == 0:
            data[at:at] = rng.choice(_PIECES)
        elif what == 1:  # cut out a piece of markup
            end = data.find(b">", at + 1)
            del data[at:end + 1 if end >= 0 else at + 1]
        elif what == 2:  # repeat an element's start tag
            end = data.find(b">", at + 1)
            data[at:at] = data[at:end + 1] if end >= 0 else b""
        elif at < len(data):  # one character for another
            data[at] = rng.randrange(32, 127)
    return bytes(data)


@settings(max_examples=examples(400, 150), deadline=None, suppress_health_check=list(HealthCheck))
@given(_mutated())
def test_mutated_documents_read_alike(data):
    _agree(data)


def test_a_large_model_reads_alike(tmp_path):
    """Many layers, ports shared between them, and names on every output."""
    n = 3000
    layers = ['<layer id="0" name="x" type="Parameter" version="opset1"><data shape="4" element_type="f32"/>'
              '<output><port id="0" precision="FP32" names="x"><dim>4</dim></port></output></layer>']
    edges = []
    for i in range(1, n):
        layers.append(f'<layer id="{i}" name="r{i}" type="Relu" version="opset1"><input><port id="0" '
                      f'precision="FP32"><dim>4</dim></port></input><output><port id="1" precision="FP32" '
                      f'names="t{i}"><dim>4</dim></port></output></layer>')
        edges.append(f'<edge from-layer="{i - 1}" from-port="{0 if i == 1 else 1}" to-layer="{i}" to-port="0"/>')
    layers.append(f'<layer id="{n}" name="out" type="Result" version="opset1"><input><port id="0" precision="FP32">'
                  f'<dim>4</dim></port></input></layer>')
    edges.append(f'<edge from-layer="{n - 1}" from-port="1" to-layer="{n}" to-port="0"/>')
    data = ('<?xml version="1.0"?>\n<net name="chain" version="11">\n<layers>\n' + "\n".join(layers)
            + "\n</layers>\n<edges>\n" + "\n".join(edges) + "\n</edges>\n</net>\n").encode()
    assert _agree(data)
    model = irscatter.parse_model(data)
    out = model.run({"x": np.array([-1, 2, -3, 4], np.float32)})
    np.testing.assert_array_equal(next(iter(out.values())), [0, 2, 0, 4])


@settings(max_examples=examples(300, 100), deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_model())
def test_models_mutated_element_by_element_read_alike(case):
    _name, _kinds, xml, _weights, _feeds = case
    _agree(xml)
