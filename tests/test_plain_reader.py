"""The plain reader (irscatter.ir.plain) against the tree reader: on every document it reads,
the same graph, lines included; anything else it leaves to the event reader (`Unread`)."""

import sys

import pytest

if sys.version_info < (3, 11):  # the reader's expressions are possessive: the loader leaves it out
    pytest.skip("the plain reader needs Python 3.11", allow_module_level=True)

from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_events import CORPUS, SMALL, _mutated, _same_graph, _tree

from irscatter import limits
from irscatter.errors import IRError
from irscatter.ir import events, loader, plain
from irscatter.ir.building import ReadContext


def _plain(data: bytes):
    """The plain reader's model, or None where it leaves the document to the other readers."""
    try:
        loader._check_document(data, "doc.xml")
        return plain.read_net(data, ReadContext("doc.xml"))
    except (events.Unread, IRError):
        return None


def _agree(data: bytes) -> bool:
    fast = _plain(data)
    if fast is None:
        return False
    _same_graph(fast, _tree(data))
    return True


def test_the_plain_reader_reads_the_writers_documents_as_the_tree_reader_does():
    written = [path for path in CORPUS if path.parent.name != "hostile"]
    read = [path for path in written if _agree(path.read_bytes())]
    assert len(read) > len(written) // 2  # (not those with bodies)
    for path in CORPUS:
        if path.parent.name == "hostile":
            _agree(path.read_bytes())


# What the plain reader leaves to the others: each a change to a small model it reads.
@pytest.mark.parametrize("change", [
    (b"<dim>", b"<dim><!-- four -->"),  # a comment
    (b"<layers>", b"<layers><?pi x?>"),  # a processing instruction
    (b"<layers>", b"<layers><![CDATA[x]]>"),
    (b"</layers>", b"<extra/></layers>"),  # an element the format does not have
    (b"<data ", b"<data/><data "),  # a second <data>
    (b"<input>", b"<input><port id=\"9\"/></input><input>"),
    (b"<net ", b"<net xmlns:a=\"u\" "),
    (b"version=\"11\"", b"version=\"12\""),
    (b"<edges>", b"<edges><edge from-layer=\"x\"/>"),
    (b"<dim>", b"<dim>-2"),
    (b"name=\"", b"name=\"a&amp;"),  # an entity
    (b"name=\"", b"name=\"a\tb"),  # a tab in a value, which XML turns into a space
    (b"name=\"", b"name=\"a\x01"),  # a character XML forbids
    (b"\n", b"\r\n"),  # a carriage return, which XML drops
    (b"<data ", b"<data x=\"1\" x=\"2\" "),  # an attribute twice: malformed
    (b"<layer id=\"0\" name=\"x\"", b"<layer name=\"x\" id=\"0\""),  # another order than the writers'
    (b"</net>", b"<rt_info><x value=\"1\"></rt_info></net>"),  # malformed net rt_info
    (b"<port id=\"0\"", b"<port id=\"0\" precision=\"XX\""),
])
def test_what_the_plain_reader_leaves_to_the_others(change):
    old, new = change
    assert _plain(SMALL) is not None
    data = SMALL.replace(old, new, 1)
    assert data != SMALL
    assert _plain(data) is None


def test_the_net_rt_info_and_declarations_are_read_alike():
    assert b"<rt_info>" in SMALL and _agree(SMALL)
    assert _agree(SMALL[:SMALL.index(b"<rt_info>")] + b"<rt_info />\n</net>\n")
    declared = SMALL.replace(b'<?xml version="1.0"?>', b"\xef\xbb\xbf<?xml version='1.0' encoding='UTF-8'?>", 1)
    assert declared != SMALL and _agree(declared)


@pytest.mark.parametrize("attributes", [b'names="a" names="b"', b'note=" names=" names="y"', b'names="" x="1"'])
def test_port_names_are_read_as_the_tree_reader_reads_them(attributes):
    data = SMALL.replace(b'names="x"', attributes, 1)
    assert data != SMALL
    if _plain(data) is not None:
        assert _agree(data)
    else:
        assert attributes.startswith(b'names="a"')  # (malformed)


@pytest.mark.parametrize("first,second", [
    (b'names="m"', b'names="a"'),
    (b'names="m"', b'names="a,b"'),
    (b'names="m"', b'names=""'),
    (b'names="m"', b'names="a names=b"'),  # a value that holds what looks like another names
    (b'names=""', b'names="a"'),
    (b'names="m" note="x"', b'names="a" note="y names= "'),
    (b'note="x names=" names="m"', b'note="x names=" names="a"'),
])
def test_outputs_that_differ_in_their_names_alone_are_read_as_the_tree_reader_reads_them(first, second):
    """The Multiply's and the Add's outputs have the same text; named differently, the second
    is read from what the first left (`_Reader._named_ports`), or read whole where its text
    differs in more than the names' values."""
    port = b'<port id="2" precision="FP32">'
    assert SMALL.count(port) == 2
    data = SMALL.replace(port, b'<port id="2" precision="FP32" ' + first + b">", 1)
    data = data.replace(port, b'<port id="2" precision="FP32" ' + second + b">", 1)
    assert port not in data and _agree(data)


def test_the_limits_leave_the_document_to_the_others():
    with limits.using(xml_depth=5):
        assert _plain(SMALL) is None
    deep = SMALL.replace(b"</rt_info>", b"<a><b><c><d><e/></d></c></b></a></rt_info>", 1)
    assert deep != SMALL and _agree(deep)
    with limits.using(xml_depth=6):  # (<e> stands 7 deep)
        assert _plain(deep) is None
        with pytest.raises(IRError, match="nested more than 6 deep"):
            _tree(deep)
    with limits.using(xml_attributes=1):
        assert _plain(SMALL) is None


@settings(max_examples=examples(150, 50), deadline=None, suppress_health_check=list(HealthCheck))
@given(_mutated())
def test_mutated_documents_read_alike(data):
    if (fast := _plain(data)) is not None:
        _same_graph(fast, _tree(data))


@settings(max_examples=examples(300, 100), deadline=None)
@given(st.lists(st.sampled_from([" ", "\t", "\n", "names", "xnames", "=", '"', "a", ",", "<port ", "/>", ">"]),
                max_size=16).map("".join))
def test_names_are_split_out_as_the_expression_splits_them(text):
    """`_split_names` matches only where "names" stands once: elsewhere it is the expression's split."""
    assert plain._split_names(text) == plain._NAME_VALUES.split(text)


@pytest.mark.parametrize("new", [
    b'<data element_type="f32" shape="4" offset="0" size="16" />',  # as the writers write it
    b'<data\n element_type = "f32"\tshape="4"  offset="0" size="16"/>',  # other white space
    b'<data element_type="f32" shape="4" offset="0" size="16" note="x" />',  # another attribute after them
    b'<data shape="4" element_type="f32" offset="0" size="16" />',  # another order: the general path
])
def test_const_data_is_read_as_the_tree_reader_reads_it(new):
    old = b'<data element_type="f32" shape="4" offset="0" size="16" />'
    data = SMALL.replace(old, new, 1)
    assert (data != SMALL) == (new != old) and _agree(data)
