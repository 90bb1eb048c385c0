"""Write the corpus of deliberately broken IRs that `irscatter validate` is tested on.

Every file starts from one clean model (BASE below: ScatterUpdate-3 whose axis is a Const,
then an Add of a Const bias) and carries exactly one defect. Its first line says which
finding the defect must produce, in a comment after the XML declaration:
`<!-- expect: SEVERITY CODE [layer=ID] -->`. The shared
`base.bin` holds the constants; a case that needs other weights gets its own `.bin`.
Run from the repository root: python tools/make_validate_corpus.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path("tests/corpus/validate")
WEIGHTS = np.array([1], np.int64).tobytes() + np.array([0.5, -1.0, 2.0], np.float32).tobytes()

BASE = """<?xml version="1.0"?>
<net name="base" version="11">
  <layers>
    <layer id="0" name="data" type="Parameter" version="opset1">
      <data shape="4,3" element_type="f32"/>
      <output><port id="0" precision="FP32" names="data"><dim>4</dim><dim>3</dim></port></output>
    </layer>
    <layer id="1" name="indices" type="Parameter" version="opset1">
      <data shape="2" element_type="i64"/>
      <output><port id="0" precision="I64" names="indices"><dim>2</dim></port></output>
    </layer>
    <layer id="2" name="updates" type="Parameter" version="opset1">
      <data shape="4,2" element_type="f32"/>
      <output><port id="0" precision="FP32" names="updates"><dim>4</dim><dim>2</dim></port></output>
    </layer>
    <layer id="3" name="axis" type="Const" version="opset1">
      <data element_type="i64" shape="" offset="0" size="8"/>
      <output><port id="0" precision="I64"/></output>
    </layer>
    <layer id="4" name="scatter" type="ScatterUpdate" version="opset3">
      <input>
        <port id="0" precision="FP32"><dim>4</dim><dim>3</dim></port>
        <port id="1" precision="I64"><dim>2</dim></port>
        <port id="2" precision="FP32"><dim>4</dim><dim>2</dim></port>
        <port id="3" precision="I64"/>
      </input>
      <output><port id="4" precision="FP32"><dim>4</dim><dim>3</dim></port></output>
    </layer>
    <layer id="5" name="bias" type="Const" version="opset1">
      <data element_type="f32" shape="3" offset="8" size="12"/>
      <output><port id="0" precision="FP32"><dim>3</dim></port></output>
    </layer>
    <layer id="6" name="add" type="Add" version="opset1">
      <data auto_broadcast="numpy"/>
      <input>
        <port id="0" precision="FP32"><dim>4</dim><dim>3</dim></port>
        <port id="1" precision="FP32"><dim>3</dim></port>
      </input>
      <output><port id="2" precision="FP32" names="out"><dim>4</dim><dim>3</dim></port></output>
    </layer>
    <layer id="7" name="out" type="Result" version="opset1">
      <input><port id="0" precision="FP32"><dim>4</dim><dim>3</dim></port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="4" to-port="0"/>
    <edge from-layer="1" from-port="0" to-layer="4" to-port="1"/>
    <edge from-layer="2" from-port="0" to-layer="4" to-port="2"/>
    <edge from-layer="3" from-port="0" to-layer="4" to-port="3"/>
    <edge from-layer="4" from-port="4" to-layer="6" to-port="0"/>
    <edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>
    <edge from-layer="6" from-port="2" to-layer="7" to-port="0"/>
  </edges>
</net>
"""

EXTRA_LAYER = """    <layer id="8" name="extra" type="Multiply" version="opset1">
      <input>
        <port id="0" precision="FP32"><dim>4</dim><dim>3</dim></port>
        <port id="1" precision="FP32"><dim>4</dim><dim>3</dim></port>
      </input>
      <output><port id="2" precision="FP32"><dim>4</dim><dim>3</dim></port></output>
    </layer>
  </layers>"""


def swap(old: str, new: str, text: str = BASE) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


# name: (expected finding, document text, weights or None for base.bin)
CASES: dict[str, tuple[str, str]] = {
    "truncated_xml": ("error xml-malformed", BASE[: len(BASE) // 2]),
    "wrong_root": ("error net-root", BASE.replace("<net ", "<model ").replace("</net>", "</model>")),
    "net_version_unsupported": ("error net-version", swap('version="11">', 'version="9">')),
    "net_version_missing": ("error net-version", swap('<net name="base" version="11">', '<net name="base">')),
    "layer_id_missing": ("error layer-attribute", swap('<layer id="5" name="bias"', '<layer name="bias"')),
    "layer_id_not_a_number": ("error layer-attribute", swap('<layer id="5" name="bias"', '<layer id="five" name="bias"')),
    "port_precision_unknown": ("error port-precision layer=6",
                               swap('<port id="1" precision="FP32"><dim>3</dim></port>',
                                    '<port id="1" precision="FP33"><dim>3</dim></port>')),
    "port_dim_below_minus_one": ("error port-dim layer=6",
                                 swap('<port id="1" precision="FP32"><dim>3</dim></port>',
                                      '<port id="1" precision="FP32"><dim>-2</dim></port>')),
    "edge_attribute_missing": ("error edge-attribute",
                               swap('<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>',
                                    '<edge from-layer="5" to-layer="6" to-port="1"/>')),
    "duplicate_layer_id": ("error duplicate-layer-id layer=3",
                           swap('<layer id="5" name="bias"', '<layer id="3" name="bias"')),
    "edge_to_missing_layer": ("error dangling-edge",
                              swap('<edge from-layer="6" from-port="2" to-layer="7" to-port="0"/>',
                                   '<edge from-layer="6" from-port="2" to-layer="7" to-port="0"/>'
                                   '<edge from-layer="6" from-port="2" to-layer="42" to-port="0"/>')),
    "edge_to_missing_port": ("error dangling-edge layer=6",
                             swap('<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>',
                                  '<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>'
                                  '<edge from-layer="5" from-port="0" to-layer="6" to-port="9"/>')),
    "duplicate_edge": ("error duplicate-edge",
                       swap('<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>',
                            '<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>' * 2)),
    "unconnected_input": ("error unconnected-input layer=6",
                          swap('<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>', "")),
    "self_edge": ("error cycle layer=6",
                  swap('<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>',
                       '<edge from-layer="6" from-port="2" to-layer="6" to-port="1"/>')),
    "unknown_opset": ("error unknown-opset layer=6", swap('type="Add" version="opset1"', 'type="Add" version="opset99"')),
    "custom_domain": ("warning custom-domain layer=6", swap('type="Add" version="opset1"', 'type="Add" version="ops1"')),
    "type_not_in_opset": ("error not-in-opset layer=4",
                          swap('type="ScatterUpdate" version="opset3"', 'type="ScatterUpdate" version="opset2"')),
    "type_unknown": ("error not-in-opset layer=6", swap('type="Add" version="opset1"', 'type="Addd" version="opset1"')),
    # the opset is complete: the test hides Subtract-1's kernel to reach this finding
    "no_kernel": ("warning no-kernel layer=6", swap('type="Add" version="opset1"', 'type="Subtract" version="opset1"')),
    "too_few_inputs": ("error input-count layer=4",
                       swap('<edge from-layer="3" from-port="0" to-layer="4" to-port="3"/>', "").replace(
                           '        <port id="3" precision="I64"/>\n', "")),
    "too_many_outputs": ("error output-count layer=6",
                         swap('<output><port id="2" precision="FP32" names="out"><dim>4</dim><dim>3</dim></port></output>',
                              '<output><port id="2" precision="FP32" names="out"><dim>4</dim><dim>3</dim></port>'
                              '<port id="3" precision="FP32"><dim>4</dim><dim>3</dim></port></output>')),
    "attribute_bad_value": ("error attributes layer=6", swap('auto_broadcast="numpy"', 'auto_broadcast="sideways"')),
    "attribute_missing": ("error attributes layer=0", swap('<data shape="4,3" element_type="f32"/>', '<data shape="4,3"/>')),
    "attribute_wrong_type": ("error attributes layer=0",
                             swap('<data shape="4,3" element_type="f32"/>', '<data shape="4,x" element_type="f32"/>')),
    "const_past_end_of_bin": ("error const-range layer=5", swap('offset="8" size="12"', 'offset="16" size="12"')),
    "const_size_mismatch": ("error const-size layer=5", swap('offset="8" size="12"', 'offset="8" size="8"')),
    "const_element_type_unknown": ("error const-attribute layer=5", swap('element_type="f32" shape="3"', 'element_type="f31" shape="3"')),
    "declared_precision_wrong": ("error declared-precision layer=6",
                                 swap('<output><port id="2" precision="FP32" names="out">',
                                      '<output><port id="2" precision="FP16" names="out">')),
    "declared_shape_wrong": ("error declared-shape layer=4",
                             swap('<output><port id="4" precision="FP32"><dim>4</dim><dim>3</dim></port></output>',
                                  '<output><port id="4" precision="FP32"><dim>4</dim><dim>5</dim></port></output>')),
    "inference_shape_error": ("error updates-shape layer=4",
                              swap('<data shape="4,2" element_type="f32"/>', '<data shape="4,5" element_type="f32"/>')
                              .replace('names="updates"><dim>4</dim><dim>2</dim>', 'names="updates"><dim>4</dim><dim>5</dim>')
                              .replace('<port id="2" precision="FP32"><dim>4</dim><dim>2</dim></port>',
                                       '<port id="2" precision="FP32"><dim>4</dim><dim>5</dim></port>')),
    "inference_type_error": ("error updates-type layer=4",
                             swap('<data shape="4,2" element_type="f32"/>', '<data shape="4,2" element_type="f16"/>')
                             .replace('precision="FP32" names="updates"', 'precision="FP16" names="updates"')
                             .replace('<port id="2" precision="FP32"><dim>4</dim><dim>2</dim></port>',
                                      '<port id="2" precision="FP16"><dim>4</dim><dim>2</dim></port>')),
    "unreachable_layer": ("warning unreachable layer=8", swap("  </layers>", EXTRA_LAYER).replace(
        "  </edges>", '    <edge from-layer="0" from-port="0" to-layer="8" to-port="0"/>\n'
                      '    <edge from-layer="0" from-port="0" to-layer="8" to-port="1"/>\n  </edges>')),
    "cycle": ("error cycle", swap('<edge from-layer="5" from-port="0" to-layer="6" to-port="1"/>',
                                 '<edge from-layer="8" from-port="2" to-layer="6" to-port="1"/>',
                                 swap("  </layers>", EXTRA_LAYER)).replace(
        "  </edges>", '    <edge from-layer="6" from-port="2" to-layer="8" to-port="0"/>\n'
                      '    <edge from-layer="0" from-port="0" to-layer="8" to-port="1"/>\n  </edges>')),
    "no_result": ("error no-result", swap('<edge from-layer="6" from-port="2" to-layer="7" to-port="0"/>', "").replace(
        """    <layer id="7" name="out" type="Result" version="opset1">
      <input><port id="0" precision="FP32"><dim>4</dim><dim>3</dim></port></input>
    </layer>
""", "")),
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "base.xml").write_text(BASE)
    (OUT / "base.bin").write_bytes(WEIGHTS)
    for name, (expect, text) in CASES.items():
        declaration, _, rest = text.partition("\n")
        (OUT / f"{name}.xml").write_text(f"{declaration}\n<!-- expect: {expect} -->\n{rest}")
        (OUT / f"{name}.bin").write_bytes(WEIGHTS)
    print(f"wrote {len(CASES)} broken models and the clean base to {OUT}")


if __name__ == "__main__":
    main()
