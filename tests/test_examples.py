"""`irscatter examples`: example layers found in documents, repaired, run and compared.

tests/corpus/examples holds documents written for these tests (every comment form and
parse hazard the runner handles, and examples that are wrong on purpose). When the
OpenVINO spec pages and the seed documents sit beside the project (../shared), the runner
must pass the seed's three SliceScatter examples and flag exactly the XML examples that
are known to be wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irscatter import examples
from irscatter.cli import main
from irscatter.ops import registry

CORPUS = Path(__file__).parent / "corpus" / "examples"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def statuses(path) -> list[str]:
    return [ex.status for ex in examples.run_document(path)]


def test_own_document_covers_every_comment_form():
    found = examples.run_document(CORPUS / "own_examples.md")
    assert [ex.type for ex in found] == ["ScatterElementsUpdate", "ScatterUpdate", "Slice", "Gather"]
    assert [ex.status for ex in found] == ["passed", "passed", "passed", "shape-checked"]
    repairs = " ".join(r for ex in found for r in ex.repairs)
    for hazard in ("removed literal '...'", "stray '>'", "moved reduction, use_init_val", "quoted unquoted",
                   "renamed the '<...' opening tag"):
        assert hazard in repairs


def test_wrong_examples_are_flagged_with_the_reason():
    found = examples.run_document(CORPUS / "wrong_examples.txt")
    assert [ex.status for ex in found] == ["failed", "failed", "not runnable"]
    assert "computed [9, 2, 3], documented [7, 2, 3]" in found[0].reason
    assert "declared dims [2] but the op produces [3]" in found[1].reason
    assert "do not broadcast" in found[2].reason


@pytest.mark.parametrize(("comments", "values"), [
    (["values: [[1, 2], [3, 4]]"], [[1, 2], [3, 4]]),
    (["data: [1 2 3]"], [1, 2, 3]),
    (["{{-1.0f, 1.0f},", "{2.0f, 3.5f}}"], [[-1.0, 1.0], [2.0, 3.5]]),
    (["{1.0f, 2.0f}", "{3.0f, 4.0f}"], [[1.0, 2.0], [3.0, 4.0]]),
    (["values: [-25], silently clamped to 0"], [-25]),
    (["  axis = 1  "], 1),
    (["axis: 1"], 1),
    (["axis: 1, the second"], None),
    (["value [1]"], [1]),
    (["indices"], None),
    (["element ids: [0, 1, 2]", "element ids: [3]"], None),
    (["values: [[11, 12],\n [13, 14]])"], [[11, 12], [13, 14]]),
])
def test_comment_values(comments, values):
    assert examples.comment_values(comments) == values


def test_cli_lines_and_closing_count(capsys):
    status = main(["examples", str(CORPUS / "own_examples.md"), str(CORPUS / "wrong_examples.txt")])
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert out[-1] == ("3 passed, 1 checked for shape only (0 of them with value comments that could not be read), "
                       "2 failed, 1 not runnable")
    assert sum(": example " in line for line in out) == 7
    assert any(line.startswith("    repaired: ") for line in out)


def test_cli_json(capsys):
    assert main(["examples", "--json", str(CORPUS / "own_examples.md")]) == 0
    report = json.loads(capsys.readouterr().out)
    first = report["examples"][0]
    assert first["status"] == "passed" and first["computed"]["output port 4"] == [12, 4, 6, 109]
    assert first["documented"]["output port 4"] == [12, 4, 6, 109]
    assert report["summary"].startswith("3 passed, 1 checked for shape only") and ", 0 failed" in report["summary"]


def test_missing_document_is_a_usage_error(tmp_path, capsys):
    assert main(["examples", str(tmp_path / "nope.rst")]) == 2
    assert "not found" in capsys.readouterr().err


def test_bare_xml_document(tmp_path):
    text = (CORPUS / "wrong_examples.txt").read_text().split("\n\n")[1]
    (tmp_path / "one.xml").write_text(text)
    assert statuses(tmp_path / "one.xml") == ["failed"]


# --- the seed document and the OpenVINO spec pages ----------------------------------------------------

needs_shared = pytest.mark.skipif(not (SHARED / "specs" / "openvino").is_dir(),
                                  reason="the spec pages and seeds are not beside this checkout")

# XML examples whose printed results are wrong (checked with numpy and OpenVINO's reference)
KNOWN_WRONG = {
    ("scatter-nd-update-15.rst", 1): "computed [50.0, 40.0, 20.0, 4.0], documented [50, 20, 20, 4]",
    ("scatter-nd-update-15.rst", 4): "computed [500.0, 2400.0, 60.0, 4.0], documented [500, 3600, 40, 4]",
    ("strided-slice-1.rst", 1): "declared dims [4, 3, 2, 2, 4, 2] but the op produces [4, 3, 2, 2, 3, 2]",
    ("strided-slice-1.rst", 2): "declared dims [1, 1] but the op produces [0, 0]",
    ("strided-slice-1.rst", 4): "declared dims [1, 3, 3] but the op produces [1, 3, 4]",
    ("strided-slice-1.rst", 8): "but the op produces [8, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 1, 5]",
}


@needs_shared
def test_seed_slice_scatter_examples_pass():
    seed = next((SHARED / "seeds").glob("000_*.txt"))
    assert statuses(seed) == ["passed", "passed", "passed"]


@needs_shared
def test_spec_pages_pass_except_the_known_wrong_examples():
    flagged = {}
    for page in sorted((SHARED / "specs" / "openvino").glob("*.rst")):
        for ex in examples.run_document(page):
            assert ex.status != "not runnable", (page.name, ex.index, ex.reason)
            if ex.status == "failed":
                flagged[(page.name, ex.index)] = ex.reason
    assert set(flagged) == set(KNOWN_WRONG)
    for key, reason in KNOWN_WRONG.items():
        assert reason in flagged[key]


def _write(tmp_path, snippet: str):
    path = tmp_path / "page.rst"
    path.write_text(".. code-block:: xml\n\n" + "\n".join("    " + line for line in snippet.splitlines()) + "\n")
    return examples.run_document(path)


def test_a_port_without_precision_takes_a_type_the_op_accepts(tmp_path):
    (ex,) = _write(tmp_path, """<layer ... type="LogicalAnd">
    <input>
        <port id="0">  <!-- values: [1, 0] -->
            <dim>2</dim>
        </port>
        <port id="1">  <!-- values: [1, 1] -->
            <dim>2</dim>
        </port>
    </input>
    <output>
        <port id="2">  <!-- values: [1, 0] -->
            <dim>2</dim>
        </port>
    </output>
</layer>""")
    assert ex.status == "passed", ex.reason
    assert any("no precision and the op refused i64 [boolean-type]: read as boolean" in r for r in ex.repairs)


def test_ragged_values_are_read_as_an_input_without_values(tmp_path):
    (ex,) = _write(tmp_path, """<layer ... type="Add">
    <input>
        <port id="0" precision="FP32">  <!-- values: [[1, 2, 3], [1, 1, 2, 3]] -->
            <dim>2</dim>
            <dim>3</dim>
        </port>
        <port id="1" precision="FP32">
            <dim>2</dim>
            <dim>3</dim>
        </port>
    </input>
    <output>
        <port id="2" precision="FP32">
            <dim>2</dim>
            <dim>3</dim>
        </port>
    </output>
</layer>""")
    assert ex.status == "shape-checked", ex.reason
    assert any("are not a rectangular array; read without values" in r for r in ex.repairs), ex.repairs


def test_misspelt_dims_self_closed_ports_and_an_open_input_group_are_mended(tmp_path):
    (ex,) = _write(tmp_path, """<layer ... type="Add">
    <input>
        <port id="0" precision="FP32"/>  <!-- values: [1, 2] -->
            <dim>2/dim>
        </port>
        <port id="1" precision="FP32">  <!-- values: [3, 4] -->
            <dim>2</xdim>
        </port>
    <output>
        <port id="2" precision="FP32">  <!-- values: [4, 6] -->
            <dim>2</dim>
        </port>
    </output>
</layer>""")
    assert ex.status == "passed", ex.reason
    repairs = " ".join(ex.repairs)
    for note in ("mended a misspelt </dim>", "reopened a self-closed <port>", "closed the <input> group"):
        assert note in repairs, repairs


def test_slips_of_the_pen_are_repaired(tmp_path):
    (ex,) = _write(tmp_path, """<layer ... type="Range">
    <data output_type="i32">
    <input>
        <port id="0">  <!-- start value: 2 -->
        </port>
    </input>
    <input>
        <port id="1">  <!-- stop value: 23 -->
        </port>
        <port id="1">  <!-- step value: 3 -->
        </port>
    </input>
    <output>
        <port id="3">
            <dim>7</dim> <!-- [ 2,  5,  8, 11, 14, 17, 20] -->
        </port>
    </output>
</layer>""")
    assert ex.status == "passed", ex.reason  # "start value: 2" is read as a value
    repairs = " ".join(ex.repairs)
    for note in ("closed an unclosed <data> tag", "merged the ports of two <input> groups",
                 "renumbered ports with duplicate ids [0, 1, 1, 3] as 0..3"):
        assert note in repairs


# --- every spec page of an op irscatter implements ------------------------------------------------

OP_SPECS = SHARED / "specs" / "openvino-docs" / "operation-sets" / "operation-specs"
needs_op_specs = pytest.mark.skipif(not OP_SPECS.is_dir(), reason="the spec pages are not beside this checkout")

# (page, example) -> why it does not pass: the page is wrong (checked against OpenVINO's reference),
# or the example is not a runnable layer at all
KNOWN_NOT_PASSING = {
    # like ROIPooling-1's, the example's <input> holds no ports
    ("proposal-1.rst", 1): "neither a Result nor a sink",
    # the example's <input> holds no ports, so the layer has no inputs to pool and no Result
    ("roi-pooling-1.rst", 1): "neither a Result nor a sink",
    # <port id="4"> is never closed
    ("ctc-loss-4.rst", 1): "Opening and ending tag mismatch",
    # the -3 page's second example is of EmbeddingBagOffsets, which opset3 does not have
    ("embedding-bag-offsets-sum-3.rst", 2): "opset3 has no operation EmbeddingBagOffsets",
    # the examples leave out `normalized`, which the page's attribute list requires
    **{("istft-16.rst", i): 'required attribute "normalized" is missing' for i in range(1, 6)},
    # convert_type="f32", where the page's own attribute allows i32 and i64 only
    **{("multinomial-13.rst", i): "convert_type must be i32 or i64, found f32" for i in range(1, 4)},
    # titled "shift is a scalar", it declares a 1-D shift of one value with two axes
    ("roll-7.rst", 2): "a 1-D shift [1] needs 1-D axes of the same length, found [2]",
    # the pages' examples use an older attribute (empty_segment_value) instead of fill_mode
    **{("segment-max-16.rst", i): 'required attribute "fill_mode" is missing' for i in range(1, 4)},
    # a draft page of a "Col2Im-14" no opset holds, with output_size and kernel_size as attributes;
    # Col2Im-15 takes them as inputs (its third example also misspells a </dim>, now mended)
    **{("col-2-im-14.rst", i): "takes 3 inputs (data, output_size, kernel_size), the layer has 1" for i in range(1, 4)},
    # TopK-1 has two outputs (values and indices); the page's example declares one
    ("top-k-1.rst", 1): "has 2 outputs, the layer declares 1",
    # the page's example is Interpolate-4's, with its four inputs; -11 takes two or three
    ("interpolate-11.rst", 1): "takes 2 to 3 inputs (image, scales_or_sizes, axes), the layer has 4",
    # the pages' output dims do not count the strings their own example lists
    ("string-tensor-pack-15.rst", 3): "declared dims [5] but the op produces [2]",
    ("string-tensor-unpack-15.rst", 2): "declared dims [2] but the op produces [5]",
    ("constant-1.rst", 1): "Const has no data",  # a Const's values live in a weights file the page lacks
    ("parameter-1.rst", 1): 'required attribute "shape" is missing',  # the page leaves out shape and type
    # ScatterNDUpdate-14 is no opset's version (opset14 holds ScatterNDUpdate-3, opset15 -15); its
    # examples index a 1-D data with 5-long index vectors and negative values
    ("scatter-nd-update-14.rst", 1): "indices.shape[-1] = 5 must be at most the rank of data (1)",
    ("scatter-nd-update-14.rst", 2): "indices.shape[-1] = 5 must be at most the rank of data (1)",
    ("scatter-nd-update-14.rst", 3): "indices.shape[-1] = 5 must be at most the rank of data (1)",
    ("scatter-nd-update-14.rst", 4): "indices.shape[-1] = 5 must be at most the rank of data (1)",
    # the Softmax pages' examples elide their ports ("<input> ... </input>")
    ("softmax-1.rst", 1): "neither a Result",
    ("softmax-8.rst", 1): "neither a Result",
    # the page is named ErfInv-16, but ErfInv first appears in opset17
    ("erfinv-16.rst", 1): "opset16 has no operation ErfInv",
    # If-8: the whole-layer example elides its ports ("..."); the others are Parameters of a body,
    # which take values only from the owning layer
    ("if-8.rst", 1): "does not parse",
    ("if-8.rst", 2): "no value was fed",
    ("if-8.rst", 5): "no value was fed",
    ("if-8.rst", 6): "no value was fed",
    # Assign alone: its variable is declared by a ReadValue the snippet lacks
    ("assign-3.rst", 1): 'no ReadValue declares variable "lstm_state_1"',
    ("assign-6.rst", 1): 'no ReadValue declares variable "lstm_state_1"',
    # Loop-5 and TensorIterator-1 show their structure with "..." for ports and bodies, and the
    # layers of a body one by one without their attributes; TensorIterator's LSTMCell example
    # joins W and R in one input, a layout of an older IR
    ("loop-5.rst", 1): "neither a Result",
    ("tensor-iterator-1.rst", 1): "neither a Result",
    ("tensor-iterator-1.rst", 2): "does not parse",
    ("tensor-iterator-1.rst", 3): 'missing "element_type", "shape"',
    ("tensor-iterator-1.rst", 4): 'required attribute "special_zero" is missing',
    ("tensor-iterator-1.rst", 5): 'required attribute "shape" is missing',
    ("tensor-iterator-1.rst", 6): 'required attribute "shape" is missing',
    ("tensor-iterator-1.rst", 7): 'missing "element_type", "shape"',
    ("tensor-iterator-1.rst", 8): 'missing "element_type", "shape"',
    ("tensor-iterator-1.rst", 9): "R must have rank 2",
    ("tensor-iterator-1.rst", 12): 'missing "element_type", "shape"',
    ("tensor-iterator-1.rst", 13): 'required attribute "special_zero" is missing',
    # same_upper with stride 2 makes a 32x32 input 16x16 (OpenVINO agrees); the pages declare 32x32
    ("max-pool-1.rst", 1): "declared",
    ("max-pool-8.rst", 1): "declared",
    ("max-pool-14.rst", 1): "declared",
    ("avg-pool-1.rst", 1): "declared",
    ("avg-pool-1.rst", 2): "declared",
    ("avg-pool-14.rst", 1): "declared",
    ("avg-pool-14.rst", 2): "declared",
    ("avg-pool-16.rst", 1): "declared",
    ("avg-pool-16.rst", 2): "declared",
    # GRUCell-3 with linear_before_reset: B must hold 4 * hidden_size = 512 values, the page gives 768
    ("gru-cell-3.rst", 1): "B has shape [768]: dimension 0 must be 512",
    # the sequence pages leave out `direction`, which their own text marks as required
    ("gru-sequence-5.rst", 1): 'required attribute "direction" is missing',
    ("lstm-sequence-1.rst", 1): 'required attribute "direction" is missing',
    ("lstm-sequence-5.rst", 1): 'required attribute "direction" is missing',
    ("rnn-sequence-5.rst", 1): 'required attribute "direction" is missing',
    **KNOWN_WRONG,
}


def _op_pages():
    import re

    from irscatter.ops import registry

    types = {c.type_name.lower() for c in registry.supported() if c.domain == "opset"} | {"constant"}
    for page in sorted(OP_SPECS.rglob("*.rst")) if OP_SPECS.is_dir() else []:
        m = re.search(r"\*\*Versioned name\*\*: \*([A-Za-z0-9]+)-(\d+)\*", page.read_text())
        if m and m.group(1).lower() in types:
            yield page


@needs_op_specs
def test_every_implemented_ops_spec_page_passes_except_the_known_wrong_examples():
    outcome = {}
    for page in _op_pages():
        for ex in examples.run_document(page):
            if not ex.ok:
                outcome[(page.name, ex.index)] = f"{ex.status}: {ex.reason}"
    assert set(outcome) == set(KNOWN_NOT_PASSING), sorted(set(outcome) ^ set(KNOWN_NOT_PASSING))
    for key, reason in KNOWN_NOT_PASSING.items():
        assert reason in outcome[key], (key, outcome[key])


def test_an_unreadable_value_comment_is_named_and_counted_apart(tmp_path, capsys):
    doc = tmp_path / "doc.md"
    doc.write_text("""
<layer id="1" type="Add" version="opset1">
    <input>
        <port id="0"><dim>2</dim><!-- values: [1, 2 --></port>
        <port id="1"><dim>2</dim></port>
    </input>
    <output>
        <port id="2"><dim>2</dim><!-- [9, 9] --></port>
    </output>
</layer>
""")
    status = main(["examples", str(doc)])
    out = capsys.readouterr().out.splitlines()
    assert status == 0  # nothing contradicts the page, but nothing confirms its values either
    assert "value comments that could not be read: input port 0 (values: [1, 2)" in out[0]
    assert "no values given for input port 1" in out[0] and out[0].endswith("output dims checked only")
    assert "1 checked for shape only (1 of them with value comments that could not be read)" in out[-1]


def test_a_document_without_examples_fails_and_says_so(tmp_path, capsys):
    doc = tmp_path / "prose.md"
    doc.write_text("No layers here, only prose about <layer> elements.\n")
    assert main(["examples", str(doc), str(CORPUS / "own_examples.md")]) == 1
    captured = capsys.readouterr()
    assert f"{doc}: no examples found" in captured.err


def test_mending_a_snippet_takes_time_in_proportion_to_its_length():
    """A self-closed <port> followed by its dims is reopened by a pattern that once rescanned a
    run of spaces for every character of it: 128 KB of spaces took 14 s. A megabyte takes well
    under a second now; the bound leaves room for a slow machine, not for a square law."""
    import time

    from irscatter.ir.snippets import repair

    snippet = '<layer id="1" type="Add" version="opset1"><input><port' + " " * 1_000_000 + 'x</input></layer>'
    start = time.perf_counter()
    repair(snippet, "opset1")
    assert time.perf_counter() - start < 20
    mended, done = repair('<layer type="Add"><input><port id="0" a="x/>y"  />\n<dim>2</dim></port></input></layer>',
                          "opset1")
    assert '<port id="0" a="x/>y">\n<dim>2</dim>' in mended
    assert "reopened a self-closed <port> that its <dim>s and </port> follow" in done


def _add_example(a: str, b: str, out: str, port_id: str = "0") -> str:
    """An Add example whose value comments are given."""
    return f"""```xml
<layer ... type="Add" version="opset1">
    <input>
        <port id="{port_id}" precision="I32">
            <dim>2</dim>  <!-- values: {a} -->
        </port>
        <port id="1" precision="I32">
            <dim>2</dim>  <!-- values: {b} -->
        </port>
    </input>
    <output>
        <port id="2" precision="I32">
            <dim>2</dim>  <!-- values: {out} -->
        </port>
    </output>
</layer>
```
"""


@pytest.mark.parametrize("document", [
    _add_example("[1, 2]", "[10, 20]", "[[11], [22, 1]]"),                 # documented rows of two lengths
    _add_example("[1, 2]", "[10, 20]", "[" + "9" * 401 + ", 1]"),          # an integer past float64
    _add_example("[99999999999999999999, 2]", "[10, 20]", "[11, 22]"),     # an input value past i32
    _add_example("[" + "7" * 4400 + ", 2]", "[10, 20]", "[11, 22]"),       # past Python's digit limit
    _add_example("[[1], [2, 3]]", "[10, 20]", "[11, 22]"),                 # input rows of two lengths
    _add_example("[1, 2]", "[10, 20]", "[11, 22]", port_id="9" * 5000),     # a port id of 5000 digits
])
def test_unreadable_values_and_ids_are_reported_per_example_not_as_a_crash(tmp_path, capsys, document):
    path = tmp_path / "doc.md"
    path.write_text(document)
    code = main(["examples", str(path)])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err
    assert "internal error" not in captured.err and "Traceback" not in captured.err
    assert "0 passed" in captured.out  # none of these can pass: its values are wrong or unreadable


def test_examples_refuses_a_binary_file_as_no_document(capsys):
    weights = Path(__file__).resolve().parent.parent / "models" / "small_cnn" / "model.bin"
    assert main(["examples", str(weights)]) == 2
    assert "a binary file, not a document" in capsys.readouterr().err



def test_a_snippet_of_an_op_outside_openvinos_opsets_takes_the_domain_that_registers_it(tmp_path):
    """Internal ops' pages leave `version` unsaid; the example is tagged with the one custom
    domain that registers the type, as OpenVINO writes `ie_internal_opset` or `extension`."""
    from irscatter.ops.base import Op, TensorInfo

    class Thrice(Op):
        inputs = ("data",)

        def infer(self, data):
            return TensorInfo(data.etype, data.shape)

        def compute(self, data):
            return data * 3

    registry.register("Thrice", 1, domain="ie_internal_opset")(Thrice)
    try:
        (ex,) = _write(tmp_path, """<layer ... type="Thrice">
    <input>
        <port id="0" precision="FP32">  <!-- values: [1, -2] -->
            <dim>2</dim>
        </port>
    </input>
    <output>
        <port id="1" precision="FP32">  <!-- values: [3, -6] -->
            <dim>2</dim>
        </port>
    </output>
</layer>""")
        assert ex.status == "passed", ex.reason
        assert any('version="ie_internal_opset"' in r for r in ex.repairs), ex.repairs
    finally:
        registry.unregister("Thrice", 1, domain="ie_internal_opset")


INTERNAL_PAGES = ["rms.rst", "rms.rts", "gated-residual.rst", "convolution-biased.rst", "convolution.rst",
                  "augru-cell.rst", "augru-sequence.rst", "augru-sequence.md"]


@needs_op_specs
@pytest.mark.parametrize("page", INTERNAL_PAGES)
def test_the_internal_ops_pages_run_their_examples(page):
    """Their examples name no version; the internal Convolution's and ConvolutionBiased's say
    type="Convolution", an opset type too, which on an internal page (its versioned name has no
    number) is the internal one; AUGRUCell's declares a sequence's Y beside Ho, which is dropped."""
    found = examples.run_document(OP_SPECS / "internal" / page)
    assert found and all(ex.ok for ex in found), [(ex.index, ex.status, ex.reason) for ex in found]
    assert all(any("ie_internal_opset" in r or "gpu_opset" in r for r in ex.repairs) for ex in found)


@pytest.mark.parametrize("first, second, status, said", [
    ('precision="I32"><dim>2', 'precision="FP32"><dim>2', "shape-checked", "dropped output port 1"),
    ("><dim>3", "><dim>4", "not runnable", "the layer declares 2"),  # no port fits: nothing dropped
])
def test_an_example_declaring_an_output_its_op_lacks_keeps_the_port_that_fits(tmp_path, first, second, status,
                                                                                  said):
    (ex,) = _write(tmp_path, f"""<layer ... type="Relu" version="opset1">
    <input>
        <port id="0"><dim>2</dim></port>
    </input>
    <output>
        <port id="1" {first}</dim></port>
        <port id="2" {second}</dim></port>
    </output>
</layer>""")
    assert ex.status == status and any(said in text for text in [ex.reason, *ex.repairs]), (ex.reason, ex.repairs)


@needs_op_specs
def test_every_example_of_the_internal_and_opset17_pages_runs():
    """No example of an internal op's page or an opset-17 page is left without a kernel: each
    passes, or is checked for shape where the page gives no values to check."""
    pages = sorted((OP_SPECS / "internal").glob("*.r*")) + sorted((OP_SPECS / "internal").glob("*.md")) \
        + sorted(OP_SPECS.glob("*/*-17.rst"))
    found = {}
    for page in pages:
        text = page.read_text()
        if "<layer" in text:
            for ex in examples.run_document(page):
                found[(page.name, ex.index)] = (ex.status, ex.reason)
    assert len(found) >= 50
    stuck = {key: value for key, value in found.items() if value[0] not in ("passed", "shape-checked")}
    assert stuck == {}
