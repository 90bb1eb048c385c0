"""Write the corpus of broken and hostile files that `irscatter run` is tested on.

Each case is one file (with its `.bin` and inputs where it needs them) carrying exactly one
defect: malformed or hostile XML, a broken layer, port or edge, a bad attribute, weights
that do not fit, a size over the limits, an op that cannot run on its inputs, or feeds that
do not fit the model. `cases.json` records, per case, what the defect must produce: the
error's kind (class name), its label, the layer it names (or null), the exit code of the
CLI, and the arguments after `irscatter run <file>`.

Most cases edit one clean model (BASE: Add of a Const bias, then ScatterUpdate-3 with a
constant index and axis). Run from the repository root: python tools/make_hostile_corpus.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

OUT = Path("tests/corpus/hostile")
# bias [2,3] f32 at 0, index [1] i64 at 24, axis i64 at 32
WEIGHTS = (np.arange(6, dtype=np.float32).tobytes() + np.array([1], np.int64).tobytes()
           + np.array(1, np.int64).tobytes())

BASE = """<?xml version="1.0"?>
<net name="hostile_base" version="11">
 <layers>
  <layer id="0" name="x" type="Parameter" version="opset1">
   <data shape="2,3" element_type="f32"/>
   <output><port id="0" precision="FP32" names="x"><dim>2</dim><dim>3</dim></port></output>
  </layer>
  <layer id="1" name="bias" type="Const" version="opset1">
   <data element_type="f32" shape="2,3" offset="0" size="24"/>
   <output><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></output>
  </layer>
  <layer id="2" name="add" type="Add" version="opset1">
   <data auto_broadcast="numpy"/>
   <input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port><port id="1" precision="FP32"><dim>2</dim><dim>3</dim></port></input>
   <output><port id="2" precision="FP32"><dim>2</dim><dim>3</dim></port></output>
  </layer>
  <layer id="3" name="index" type="Const" version="opset1">
   <data element_type="i64" shape="1" offset="24" size="8"/>
   <output><port id="0" precision="I64"><dim>1</dim></port></output>
  </layer>
  <layer id="4" name="upd" type="Parameter" version="opset1">
   <data shape="2,1" element_type="f32"/>
   <output><port id="0" precision="FP32" names="upd"><dim>2</dim><dim>1</dim></port></output>
  </layer>
  <layer id="5" name="axis" type="Const" version="opset1">
   <data element_type="i64" shape="" offset="32" size="8"/>
   <output><port id="0" precision="I64"/></output>
  </layer>
  <layer id="6" name="scatter" type="ScatterUpdate" version="opset3">
   <input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port><port id="1" precision="I64"><dim>1</dim></port><port id="2" precision="FP32"><dim>2</dim><dim>1</dim></port><port id="3" precision="I64"/></input>
   <output><port id="4" precision="FP32" names="y"><dim>2</dim><dim>3</dim></port></output>
  </layer>
  <layer id="7" name="out" type="Result" version="opset1">
   <input><port id="0" precision="FP32"><dim>2</dim><dim>3</dim></port></input>
  </layer>
 </layers>
 <edges>
  <edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
  <edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>
  <edge from-layer="2" from-port="2" to-layer="6" to-port="0"/>
  <edge from-layer="3" from-port="0" to-layer="6" to-port="1"/>
  <edge from-layer="4" from-port="0" to-layer="6" to-port="2"/>
  <edge from-layer="5" from-port="0" to-layer="6" to-port="3"/>
  <edge from-layer="6" from-port="4" to-layer="7" to-port="0"/>
 </edges>
</net>
"""
FEEDS = {"x": np.ones((2, 3), np.float32), "upd": np.full((2, 1), 7, np.float32)}
RUN = ["--inputs", "{dir}/base.inputs.npz"]


def edit(old: str, new: str, count: int = 1) -> str:
    assert BASE.count(old) >= count, old
    return BASE.replace(old, new, count)


def layer_def(lid: int) -> str:
    start = BASE.index(f'<layer id="{lid}"')
    return BASE[start: BASE.index("</layer>", start) + len("</layer>")]


def entity_doc(doctype: str, body: str = "&e;") -> str:
    return f'<?xml version="1.0"?>\n{doctype}\n<net name="n" version="11"><layers/><edges/><!-- {body} --></net>\n'


# name: (xml text or bytes, weights or None (base) or False (no .bin), expected, extra)
# expected: (kind, label, layer id or None, exit code)
CASES: dict[str, tuple] = {
    # --- the document ---------------------------------------------------------------------------
    "truncated_xml": (BASE[: len(BASE) // 2], None, ("LoadError", "xml-malformed", None, 1)),
    "empty_file": ("", None, ("LoadError", "xml-malformed", None, 1)),
    "binary_garbage": (bytes(range(256)) * 4, None, ("LoadError", "xml-malformed", None, 1)),
    "invalid_utf8": (BASE.replace('name="add"', 'name="a\udcffd"').encode("utf-8", "surrogateescape"), None,
                     ("LoadError", "xml-malformed", None, 1)),
    "wrong_root": (BASE.replace("<net ", "<model ").replace("</net>", "</model>"), None,
                   ("LoadError", "net-root", None, 1)),
    "no_ir_version": (edit(' version="11"', ""), None, ("LoadError", "net-version", None, 1)),
    "ir_version_7": (edit(' version="11"', ' version="7"'), None, ("LoadError", "net-version", None, 1)),
    "ir_version_of_five_thousand_digits": (edit(' version="11"', ' version="' + "9" * 5000 + '"'), None,
                                           ("LoadError", "net-version", None, 1)),
    "undeclared_entity": (edit('name="add"', 'name="&undefined;"'), None, ("LoadError", "xml-malformed", None, 1)),
    "billion_laughs": (entity_doc('<!DOCTYPE net [<!ENTITY l0 "lol">'
                                  + "".join(f'<!ENTITY l{i} "{("&l" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
                                  + "]>", "&l9;"), None, ("SecurityError", "doctype", None, 1)),
    "quadratic_blowup": (entity_doc(f'<!DOCTYPE net [<!ENTITY e "{"x" * 50000}">]>', "&e;" * 5000), None,
                         ("SecurityError", "doctype", None, 1)),
    "xxe_local_file": (entity_doc('<!DOCTYPE net [<!ENTITY e SYSTEM "file:///etc/passwd">]>'), None,
                       ("SecurityError", "doctype", None, 1)),
    "xxe_url": (entity_doc('<!DOCTYPE net [<!ENTITY e SYSTEM "http://127.0.0.1:9/x">]>'), None,
                ("SecurityError", "doctype", None, 1)),
    "external_dtd": (entity_doc('<!DOCTYPE net SYSTEM "http://127.0.0.1:9/ir.dtd">', ""), None,
                     ("SecurityError", "doctype", None, 1)),
    "parameter_entity": (entity_doc('<!DOCTYPE net [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>', ""), None,
                         ("SecurityError", "doctype", None, 1)),
    "xinclude_instead_of_layers": (
        BASE[: BASE.index("<layers>")] + '<xi:include xmlns:xi="http://www.w3.org/2001/XInclude" href="/etc/passwd"/>'
        + BASE[BASE.index("</layers>") + len("</layers>"):], None, ("ValidationError", "dangling-edge", None, 1)),
    "nesting_too_deep": (edit("<edges>", "<edges>" + "<x>" * 200 + "</x>" * 200), None,
                         ("SecurityError", "xml-depth", None, 1)),
    # --- layers, ports, edges -----------------------------------------------------------------
    "layer_without_id": (edit('<layer id="2" ', "<layer "), None, ("LoadError", "layer-attribute", None, 1)),
    "layer_id_not_a_number": (edit('<layer id="2" ', '<layer id="two" '), None, ("LoadError", "layer-attribute", None, 1)),
    "layer_without_type": (edit(' type="Add"', ""), None, ("LoadError", "layer-attribute", None, 1)),
    "layer_without_version": (edit('type="Add" version="opset1"', 'type="Add"'), None,
                              ("LoadError", "layer-attribute", None, 1)),
    "port_without_id": (edit('<port id="2" precision="FP32">', '<port precision="FP32">'), None,
                        ("LoadError", "port-attribute", 2, 1)),
    "port_id_not_a_number": (edit('<port id="2" precision="FP32">', '<port id="x" precision="FP32">'), None,
                             ("LoadError", "port-attribute", 2, 1)),
    "layer_id_of_five_thousand_digits": (edit('<layer id="2" ', '<layer id="' + "9" * 5000 + '" '), None,
                                         ("LoadError", "layer-attribute", None, 1)),
    "port_id_of_five_thousand_digits": (edit('<port id="2" precision="FP32">', '<port id="' + "9" * 5000
                                             + '" precision="FP32">'), None, ("LoadError", "port-attribute", 2, 1)),
    "dim_of_five_thousand_digits": (edit("<output><port id=\"2\" precision=\"FP32\"><dim>2</dim>",
                                         "<output><port id=\"2\" precision=\"FP32\"><dim>" + "9" * 5000 + "</dim>"),
                                    None, ("LoadError", "port-dim", 2, 1)),
    "dim_not_a_number": (edit("<dim>3</dim></port></output>\n  </layer>\n  <layer id=\"3\"",
                              "<dim>three</dim></port></output>\n  </layer>\n  <layer id=\"3\""), None,
                         ("LoadError", "port-dim", 2, 1)),
    "dim_below_minus_one": (edit("<output><port id=\"2\" precision=\"FP32\"><dim>2</dim>",
                                 "<output><port id=\"2\" precision=\"FP32\"><dim>-2</dim>"), None,
                            ("LoadError", "port-dim", 2, 1)),
    "dim_fractional": (edit("<output><port id=\"2\" precision=\"FP32\"><dim>2</dim>",
                            "<output><port id=\"2\" precision=\"FP32\"><dim>1.5</dim>"), None,
                       ("LoadError", "port-dim", 2, 1)),
    "unknown_port_precision": (edit('<port id="2" precision="FP32">', '<port id="2" precision="FP99">'), None,
                               ("LoadError", "port-precision", 2, 1)),
    "duplicate_layer_id": (edit('<layer id="3" name="index"', '<layer id="2" name="index"'), None,
                           ("ValidationError", "duplicate-layer-id", 2, 1)),
    "edge_missing_attribute": (edit('<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>',
                                    '<edge from-layer="0" to-layer="2" to-port="0"/>'), None,
                               ("LoadError", "edge-attribute", None, 1)),
    "edge_attribute_not_a_number": (edit('from-layer="0" from-port="0" to-layer="2"',
                                         'from-layer="zero" from-port="0" to-layer="2"'), None,
                                    ("LoadError", "edge-attribute", None, 1)),
    "edge_attribute_of_five_thousand_digits": (edit('from-layer="0" from-port="0" to-layer="2"',
                                                    'from-layer="' + "9" * 5000 + '" from-port="0" to-layer="2"'),
                                               None, ("LoadError", "edge-attribute", None, 1)),
    "edge_to_missing_layer": (edit('to-layer="7" to-port="0"', 'to-layer="70" to-port="0"'), None,
                              ("ValidationError", "dangling-edge", None, 1)),
    "edge_to_missing_port": (edit('to-layer="2" to-port="1"', 'to-layer="2" to-port="5"'), None,
                             ("ValidationError", "dangling-edge", 2, 1)),
    "edge_from_missing_port": (edit('from-layer="2" from-port="2"', 'from-layer="2" from-port="9"'), None,
                               ("ValidationError", "dangling-edge", 2, 1)),
    "self_edge": (edit('<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>',
                       '<edge from-layer="2" from-port="2" to-layer="2" to-port="0"/>'), None,
                  ("ValidationError", "cycle", 2, 1)),
    "duplicate_edge": (edit('<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>',
                            '<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>' * 2), None,
                       ("ValidationError", "duplicate-edge", None, 1)),
    "two_edges_into_one_input": (edit('<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>',
                                      '<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>'
                                      '<edge from-layer="0" from-port="0" to-layer="2" to-port="1"/>'), None,
                                 ("ValidationError", "duplicate-input", 2, 1)),
    "unconnected_input": (edit('<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>', ""), None,
                          ("ValidationError", "unconnected-input", 2, 1)),
    "no_result": (edit(layer_def(7), "").replace('<edge from-layer="6" from-port="4" to-layer="7" to-port="0"/>', ""),
                  None, ("ValidationError", "no-result", None, 1)),
    "empty_graph": ('<?xml version="1.0"?>\n<net name="e" version="11"><layers/><edges/></net>\n', None,
                    ("ValidationError", "no-result", None, 1)),
    # --- ops and attributes --------------------------------------------------------------------
    "unknown_type": (edit('type="Add"', 'type="Frobnicate"'), None, ("ValidationError", "not-in-opset", 2, 1)),
    "unknown_opset": (edit('type="Add" version="opset1"', 'type="Add" version="opset99"'), None,
                      ("ValidationError", "unknown-opset", 2, 1)),
    "custom_domain": (edit('type="Add" version="opset1"', 'type="Add" version="myopset3"'), None,
                      ("ValidationError", "custom-domain", 2, 1)),
    "op_newer_than_its_opset": (edit('type="ScatterUpdate" version="opset3"', 'type="ScatterUpdate" version="opset2"'),
                                None, ("ValidationError", "not-in-opset", 6, 1)),
    # the opset is complete: the tests hide Subtract-1's kernel to reach this error
    "no_kernel": (edit('type="Add" version="opset1"', 'type="Subtract" version="opset1"'), None,
                  ("ValidationError", "no-kernel", 2, 1)),
    "attribute_wrong_type": (edit('<data auto_broadcast="numpy"/>', '<data auto_broadcast="7"/>'), None,
                             ("ValidationError", "attributes", 2, 1)),
    "attribute_unknown_value": (edit('<data auto_broadcast="numpy"/>', '<data auto_broadcast="sideways"/>'), None,
                                ("ValidationError", "attributes", 2, 1)),
    "too_many_inputs": (edit('<port id="1" precision="FP32"><dim>2</dim><dim>3</dim></port></input>',
                             '<port id="1" precision="FP32"><dim>2</dim><dim>3</dim></port>'
                             '<port id="5" precision="FP32"><dim>2</dim><dim>3</dim></port></input>')
                        .replace('<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>',
                                 '<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>'
                                 '<edge from-layer="0" from-port="0" to-layer="2" to-port="5"/>'),
                        None, ("ValidationError", "input-count", 2, 1)),
    "too_many_outputs": (edit('<output><port id="2" precision="FP32"><dim>2</dim><dim>3</dim></port></output>',
                              '<output><port id="2" precision="FP32"><dim>2</dim><dim>3</dim></port>'
                              '<port id="3" precision="FP32"><dim>2</dim><dim>3</dim></port></output>'), None,
                         ("ValidationError", "output-count", 2, 1)),
    "shapes_do_not_broadcast": (edit('<data shape="2,3" element_type="f32"/>', '<data shape="4,5" element_type="f32"/>'),
                                None, ("ValidationError", "broadcast", 2, 1)),
    "element_types_differ": (edit('<data shape="2,3" element_type="f32"/>', '<data shape="2,3" element_type="i32"/>'),
                             None, ("ValidationError", "same-element-type", 2, 1), ["--random"]),
    "scatter_updates_shape": (edit('<data shape="2,1" element_type="f32"/>', '<data shape="2,2" element_type="f32"/>'),
                              None, ("ValidationError", "updates-shape", 6, 1), ["--random"]),
    "parameter_unknown_element_type": (edit('<data shape="2,3" element_type="f32"/>',
                                            '<data shape="2,3" element_type="f33"/>'), None,
                                       ("ValidationError", "attributes", 0, 1)),
    "parameter_of_a_trillion_elements": (edit('<data shape="2,1" element_type="f32"/>',
                                              '<data shape="1000000,1000000" element_type="f32"/>'), None,
                                         ("ValidationError", "tensor-limit", 4, 1), ["--random"]),
    "parameter_of_rank_a_hundred_thousand": (edit('<data shape="2,1" element_type="f32"/>',
                                         '<data shape="' + ",".join(["1"] * 100000) + '" element_type="f32"/>'), None,
                                    ("ValidationError", "attributes", 4, 1)),
    # --- weights ---------------------------------------------------------------------------------
    "const_past_end_of_bin": (edit('offset="32" size="8"', 'offset="40" size="8"'), None,
                              ("LoadError", "const-range", 5, 1)),
    "const_offset_huge": (edit('offset="32" size="8"', 'offset="1180591620717411303424" size="8"'), None,
                          ("LoadError", "const-range", 5, 1)),
    "const_offset_of_five_thousand_digits": (edit('offset="32" size="8"', 'offset="' + "9" * 5000 + '" size="8"'), None,
                                             ("LoadError", "const-range", 5, 1)),
    "const_size_mismatch": (edit('offset="24" size="8"', 'offset="24" size="16"'), None,
                            ("LoadError", "const-size", 3, 1)),
    "const_shape_overflows": (edit('element_type="i64" shape="1" offset="24" size="8"',
                                   'element_type="i64" shape="4294967296,4294967296" offset="24" size="8"'), None,
                              ("LoadError", "const-size", 3, 1)),
    "const_negative_offset": (edit('offset="24" size="8"', 'offset="-8" size="8"'), None,
                              ("LoadError", "const-attribute", 3, 1)),
    "const_unknown_element_type": (edit('<data element_type="i64" shape="1"', '<data element_type="i65" shape="1"'),
                                   None, ("LoadError", "const-attribute", 3, 1)),
    "const_dynamic_element_type": (edit('<data element_type="i64" shape="1"', '<data element_type="dynamic" shape="1"'),
                                   None, ("LoadError", "const-attribute", 3, 1)),
    "const_shape_not_numbers": (edit('element_type="i64" shape="1"', 'element_type="i64" shape="a,b"'), None,
                                ("LoadError", "const-attribute", 3, 1)),
    "const_missing_size": (edit('offset="24" size="8"', 'offset="24"'), None, ("LoadError", "const-attribute", 3, 1)),
    "truncated_bin": (BASE, WEIGHTS[:30], ("LoadError", "const-range", 3, 1)),
    "missing_bin": (BASE, False, ("LoadError", "no-weights", 1, 1)),
    # --- elements given twice, ports sharing an id, too many attributes ------------------------
    "duplicate_port_id": (edit('<output><port id="2" precision="FP32"><dim>2</dim><dim>3</dim></port></output>',
                               '<output><port id="1" precision="FP32"><dim>2</dim><dim>3</dim></port></output>'),
                          None, ("LoadError", "duplicate-port", 2, 1)),
    "second_edges_element": (BASE.replace("</edges>", "</edges><edges/>"), None,
                             ("LoadError", "duplicate-element", None, 1)),
    "second_data_element": (edit('<data auto_broadcast="numpy"/>',
                                 '<data auto_broadcast="numpy"/><data auto_broadcast="none"/>'), None,
                            ("LoadError", "duplicate-element", 2, 1)),
    "attributes_past_the_limit": (  # (read in linear time; 200 000 of them in tests/test_hostile_round3_limits.py)
        edit('<data auto_broadcast="numpy"/>',
             '<data auto_broadcast="numpy" ' + " ".join(f'a{i}="1"' for i in range(20_000)) + "/>"), None,
        ("SecurityError", "xml-attributes", None, 1)),
    # --- running ---------------------------------------------------------------------------------
    "scatter_index_out_of_range": (BASE, WEIGHTS[:24] + np.array([3], np.int64).tobytes() + WEIGHTS[32:],
                                   ("ExecutionError", "index-range", 6, 1)),
    "scatter_negative_index_in_v3": (BASE, WEIGHTS[:24] + np.array([-1], np.int64).tobytes() + WEIGHTS[32:],
                                     ("ExecutionError", "index-range", 6, 1)),
    "scatter_axis_out_of_range": (BASE, WEIGHTS[:32] + np.array(5, np.int64).tobytes(),
                                  ("ValidationError", "axis-range", 6, 1)),
    "feed_of_the_wrong_dtype": (BASE, None, ("ExecutionError", "feed-dtype", 0, 1), ["--inputs", "{dir}/f64.inputs.npz"]),
    "feed_of_the_wrong_shape": (BASE, None, ("ExecutionError", "feed-shape", 0, 1), ["--inputs", "{dir}/shape.inputs.npz"]),
    "feed_of_the_wrong_rank": (BASE, None, ("ExecutionError", "feed-shape", 4, 1), ["--inputs", "{dir}/rank.inputs.npz"]),
    "feed_missing": (BASE, None, ("ExecutionError", "missing-input", 4, 1), ["--inputs", "{dir}/missing.inputs.npz"]),
    "feed_for_no_input": (BASE, None, ("ExecutionError", "unknown-input", None, 1), ["--inputs", "{dir}/extra.inputs.npz"]),
    "inputs_file_not_npz": (BASE, None, ("LoadError", None, None, 1), ["--inputs", "{dir}/not_npz.inputs.npz"]),
    "model_file_missing": (None, None, ("FileAccessError", None, None, 2)),
}

SIDE_FILES = {
    "base.inputs.npz": FEEDS,
    "f64.inputs.npz": {**FEEDS, "x": FEEDS["x"].astype(np.float64) + 0.1},  # 1.1 is no f32 value: not converted
    "shape.inputs.npz": {**FEEDS, "x": np.ones((3, 2), np.float32)},
    "rank.inputs.npz": {**FEEDS, "upd": np.ones(2, np.float32)},
    "missing.inputs.npz": {"x": FEEDS["x"]},
    "extra.inputs.npz": {**FEEDS, "cache": np.ones(2, np.float32)},
}


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    for name, arrays in SIDE_FILES.items():
        np.savez(OUT / name, **arrays)
    (OUT / "not_npz.inputs.npz").write_bytes(b"this is not a zip archive")
    manifest = {}
    for name, (text, weights, (kind, label, layer, code), *extra) in CASES.items():
        xml = OUT / f"{name}.xml"
        if text is not None:  # None: the case is a file that is not there
            xml.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape"))
            if weights is not False:
                xml.with_suffix(".bin").write_bytes(WEIGHTS if weights is None else weights)
        manifest[name] = {"kind": kind, "label": label, "layer": layer, "exit": code,
                          "args": extra[0] if extra else RUN}
    (OUT / "cases.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(CASES)} cases to {OUT}")


if __name__ == "__main__":
    main()
