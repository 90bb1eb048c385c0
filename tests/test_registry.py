"""Opset resolution as OpenVINO's opset tables do it, duplicate registration, and the
labelled errors an IR file produces end to end."""

import numpy as np
import pytest
from helpers import OP_SPECS, kernel_hidden, layer, net, param, port, result, write

import irscatter
from irscatter.ops import registry
from irscatter.ops.base import FloatList, IntList, Op, OpAttrs


@pytest.mark.parametrize(
    "type_name, opset, version",
    [
        ("ScatterElementsUpdate", "opset3", 3), ("ScatterElementsUpdate", "opset11", 3),
        ("ScatterElementsUpdate", "opset12", 12), ("ScatterElementsUpdate", "opset16", 12),
        ("ScatterNDUpdate", "opset4", 4), ("ScatterNDUpdate", "opset14", 4), ("ScatterNDUpdate", "opset15", 15),
        ("Gather", "opset1", 1), ("Gather", "opset6", 1), ("Gather", "opset7", 7), ("Gather", "opset15", 8),
        ("GatherND", "opset5", 5), ("GatherND", "opset8", 8), ("gathernd", "opset8", 8), ("CONST", "opset16", 1),
        ("ScatterNdUpdate", "opset15", 15), ("SliceScatter", "opset15", 15), ("Slice", "opset8", 8),
        ("ShapeOf", "opset1", 1), ("ShapeOf", "opset3", 3), ("Broadcast", "opset2", 1), ("Broadcast", "opset3", 3),
    ],
)
def test_the_version_an_opset_holds(type_name, opset, version):
    assert registry.find(type_name, opset).version == version


@pytest.mark.parametrize("type_name, opset, label, message", [
    ("ScatterUpdate", "opset2", "not-in-opset", "(ScatterUpdate first appears in opset3)"),
    ("SliceScatter", "opset14", "not-in-opset", "(SliceScatter first appears in opset15)"),
    ("ScaledDotProductAttention", "opset12", "not-in-opset", "first appears in opset13"),
    ("ScatterUpdat", "opset15", "not-in-opset", "did you mean ScatterUpdate or ScatterNDUpdate or ScatterElementsUpdate?"),
    ("Frobnicate", "opset15", "not-in-opset", "opset15 has no operation Frobnicate"),
    ("Add", "opset17", "not-in-opset", "opset17 is still being defined"),
    ("ScatterNDUpdate", "opset3", "not-in-opset", "first appears in opset4"),
    ("Add", "opset99", "unknown-opset", "OpenVINO (it defines opset1 to opset17"),
    ("Add", "opset0", "unknown-opset", "not an opset of OpenVINO"),
    ("Add", "Opset1", "unknown-opset", 'case-sensitive and unpadded (did you mean "opset1"?)'),
    ("Add", "opsetX", "custom-domain", "is not one of OpenVINO's opsets"),
    ("Add", "extension", "not-in-opset", "extension has no operation Add"),
    ("Add", "ie_internal_opset", "not-in-opset", "ie_internal_opset has no operation Add"),
    ("Add", "opset", "custom-domain", "is not one of OpenVINO's opsets"),
    ("Convolution", "Opset", "custom-domain", "no ops are registered for it"),
    ("Add", "irscatter1", "not-in-opset", "irscatter1 has no operation Add"),
    ("Subtract", "opset1", "no-kernel", "irscatter has no kernel for Subtract-1 yet (an OpenVINO op)"),
    ("Gather", "opset16", "no-kernel", "no kernel for Gather-8 yet (an OpenVINO op; it implements Gather-1, Gather-7)"),
])
def test_what_does_not_resolve_says_why(type_name, opset, label, message):
    with kernel_hidden("Subtract", 1), kernel_hidden("Gather", 8):
        found = registry.resolve(type_name, opset)
    assert found.cls is None and found.label == label
    assert message is None or message in found.message, found.message


def test_the_tables_are_openvinos():
    from irscatter.ir.opset_tables import OPENVINO_VERSION, OPSETS

    assert sorted(OPSETS) == list(range(1, 18))
    assert len({t for types in OPSETS.values() for t in types}) == 209
    assert OPSETS[15]["ScatterNDUpdate"] == 15 and OPSETS[14]["ScatterNDUpdate"] == 4 and OPSETS[16]["Gather"] == 8
    assert OPENVINO_VERSION.count(".") == 2


def test_every_registered_opset_op_is_a_version_openvino_defines():
    from irscatter.ir.opset_tables import OPSETS
    from irscatter.ir.opsets import DRAFTS

    tables = [*OPSETS.values(), *DRAFTS.values()]
    defined = {(t.lower(), v) for types in tables for t, v in types.items()} | {("const", 1)}
    for cls in registry.supported():
        if cls.domain == "opset":
            assert (cls.type_name.lower(), cls.version) in defined, cls.label()


def test_the_catalog_names_the_module_of_every_op():
    """Ops are imported when a model first names them, found through ops/catalog.py: it must say
    exactly what the modules register (tools/make_op_catalog.py writes it)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from make_op_catalog import render

    from irscatter.ops import catalog

    assert render() == Path(catalog.__file__).read_text(), "ops/catalog.py is stale: python tools/make_op_catalog.py"


def test_a_model_imports_only_the_ops_it_names():
    """Start-up imports no op module; resolving a type imports the module that registers it."""
    import subprocess
    import sys

    code = ("import sys, irscatter; from irscatter.ops import registry; "
            "before = {m for m in sys.modules if m.startswith('irscatter.ops.detection.')}; "
            "cls = registry.find('PriorBox', 'opset8'); "
            "after = {m for m in sys.modules if m.startswith('irscatter.ops.detection.')}; "
            "print(sorted(before), cls.__module__ in after, len(after))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "[]" and out[1] == "True" and int(out[2]) < 4, out


def test_the_tables_match_the_installed_openvino():
    """The committed tables are those of the pinned openvino (tools/make_opset_tables.py)."""
    pytest.importorskip("openvino")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    import make_opset_tables

    from irscatter.ir import opset_tables

    folder = Path(make_opset_tables.openvino.__file__).parent / "include" / "openvino" / "opsets"
    version = make_opset_tables.openvino.get_version().split("-")[0]
    assert make_opset_tables.render(make_opset_tables.numbered(make_opset_tables.read_tables(folder)), version) \
        == Path(opset_tables.__file__).with_name("opset_tables.json").read_text()


@pytest.mark.parametrize("missing", ["infer", "compute"])
def test_a_custom_op_without_inference_or_kernel_is_refused_clearly(tmp_path, missing):
    from irscatter.ops.base import TensorInfo

    methods = {"inputs": ("data",), "infer": lambda self, data: TensorInfo(data.etype, data.shape),
               "compute": lambda self, data: data.copy()}
    del methods[missing]
    registry.register("Half", 1, domain="partial")(type("Half", (Op,), methods))
    try:
        layers = [param(0, "x", [3]),
                  layer(1, "h", "Half", "partial1", inputs=[port(0, "FP32", [3])], outputs=[port(1, "FP32", [3])]),
                  result(2, "r", [3])]
        model = irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)])))
        error = irscatter.ValidationError if missing == "infer" else irscatter.ExecutionError
        with pytest.raises(error, match=f"Half-1 was registered without .*{missing}") as caught:
            model.run({"x": np.zeros(3, np.float32)})
        assert caught.value.label == "no-kernel" and caught.value.layer.name == "h"
    finally:
        registry.unregister("Half", 1, domain="partial")


def test_a_custom_op_registers_from_user_code(tmp_path):
    """Register a kernel for a new type in a domain of one's own, and run a model that uses it."""
    from typing import Annotated, Literal

    from irscatter.ops.base import Lower, OpAttrs, TensorInfo, check

    @registry.register("Clip01", 2, domain="mydomain")
    class Clip01(Op):
        """Clamp to [0, 1], or to [-1, 1] when `symmetric`."""

        class Attrs(OpAttrs):
            mode: Annotated[Literal["unit", "symmetric"], Lower] = "unit"

        inputs = ("data",)

        def infer(self, data: TensorInfo) -> TensorInfo:
            check(data.etype.is_float, "float-input", f"takes floats, not {data.etype}", port="input 0")
            return TensorInfo(data.etype, data.shape)

        def compute(self, data: np.ndarray) -> np.ndarray:
            return np.clip(data, -1.0 if self.attrs.mode == "symmetric" else 0.0, 1.0).astype(data.dtype)

    try:
        layers = [param(0, "x", [3]),
                  layer(1, "c", "Clip01", "mydomain5", data={"mode": "symmetric"}, inputs=[port(0, "FP32", [3])],
                        outputs=[port(1, "FP32", [3])]),
                  result(2, "r", [3])]
        model = irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)])))
        out = model.run({"x": np.array([-3, 0.5, 7], np.float32)})
        assert next(iter(out.values())).tolist() == [-1.0, 0.5, 1.0]
        assert irscatter.validate(model).findings == []
        assert registry.resolve("Clip01", "mydomain1").label == "not-in-opset"  # version 2 is newer than 1
    finally:
        registry.unregister("Clip01", 2, domain="mydomain")
    assert registry.resolve("Clip01", "mydomain5").label == "custom-domain"


@pytest.mark.parametrize("opset", ["extension", "Extension", "extension1", "extension13"])
def test_openvinos_extension_domain_resolves_like_an_opset(opset):
    """OpenVINO writes PagedAttentionExtension as version="extension", a domain name without a number."""
    from irscatter.ops.internal.paged_attention_extension import PagedAttentionExtension

    assert registry.resolve("PagedAttentionExtension", opset).cls is PagedAttentionExtension
    assert registry.resolve("pagedattentionextension", opset).cls is PagedAttentionExtension


@pytest.mark.parametrize("domain, tag", [("ie_internal_opset", "ie_internal_opset"), ("acme.ops-v2", "acme.ops-v2"),
                                         ("vendor7", "vendor7"), ("Mixed_Case", "mixed_case"), ("acme", "acme")])
def test_user_code_registers_ops_for_any_domain_name(tmp_path, domain, tag):
    """A domain is any name: a layer tagged with the name as it stands resolves to the newest
    version registered, whatever the name ends in (OpenVINO's internal ops use
    `ie_internal_opset`); a number after the name still bounds the version."""
    from irscatter.ops.base import TensorInfo

    class Twice(Op):
        inputs = ("data",)

        def infer(self, data):
            return TensorInfo(data.etype, data.shape)

        def compute(self, data):
            return data * 2

    registry.register("Twice", 3, domain=domain)(Twice)
    try:
        assert registry.resolve("Twice", tag).cls is Twice
        layers = [param(0, "x", [2]),
                  layer(1, "t", "Twice", tag, inputs=[port(0, "FP32", [2])], outputs=[port(1, "FP32", [2])]),
                  result(2, "r", [2])]
        model = irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)])))
        assert next(iter(model.run({"x": np.array([1.5, -2], np.float32)}).values())).tolist() == [3.0, -4.0]
        assert irscatter.validate(model).findings == []
        if domain == "acme":
            assert registry.resolve("Twice", "acme3").cls is Twice and registry.resolve("Twice", "acme2").cls is None
    finally:
        registry.unregister("Twice", 3, domain=domain)
    # irscatter registers OpenVINO's internal ops under ie_internal_opset: the domain stays known
    assert registry.resolve("Twice", tag).label == ("not-in-opset" if tag == "ie_internal_opset" else "custom-domain")


def test_an_unnumbered_domain_names_no_version_in_messages(tmp_path):
    from irscatter.ir.opsets import version_text

    assert version_text("PagedAttentionExtension", "extension") == "extension"
    assert version_text("PagedAttentionExtension", "extension1") == "1"
    assert version_text("PagedScatterUpdate", "irscatter1") == "1"


def test_a_domain_must_be_named():
    with pytest.raises(ValueError, match="must be named"):
        registry.register("Nameless", 1, domain=" ")


def test_duplicate_registration_is_refused():
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.register("ScatterUpdate", 3)(type("Again", (Op,), {}))


def _scatter_nd_ir(tmp_path, updates_dims, indices_values=None):
    """data [4, 4] f32, indices [5, 1] i64 (a Const), updates from a Parameter."""
    from irscatter.ir.element_types import ElementType, encode

    idx = np.array(indices_values if indices_values is not None else [[0], [1], [2], [3], [1]], np.int64)
    layers = [
        param(0, "data", [4, 4]),
        layer(1, "idx", "Const", data={"element_type": "i64", "shape": "5,1", "offset": 0, "size": 40},
              outputs=[port(0, "I64", [5, 1])]),
        param(2, "upd", updates_dims),
        layer(3, "scatter", "ScatterNDUpdate", "opset15", data={"reduction": "sum"},
              inputs=[port(0, "FP32", [4, 4]), port(1, "I64", [5, 1]), port(2, "FP32", updates_dims)],
              outputs=[port(3, "FP32", [4, 4])]),
        result(4, "out", [4, 4]),
    ]
    edges = [(0, 0, 3, 0), (1, 0, 3, 1), (2, 0, 3, 2), (3, 3, 4, 0)]
    return irscatter.read_model(write(tmp_path, net(layers, edges), encode(idx, ElementType.i64)))


def test_shape_error_names_layer_port_rule_and_shapes(tmp_path):
    with pytest.raises(irscatter.ValidationError) as info:
        _scatter_nd_ir(tmp_path, [5]).compile()
    text = str(info.value)
    assert 'layer 3 "scatter" (ScatterNDUpdate-15) input 2: updates shape [5] must be ' \
           "indices.shape[:-1] + data.shape[k:] = [5, 4] (k = 1) [updates-shape]" in text
    assert text.startswith(str(tmp_path / "model.xml") + ":")


def test_index_error_at_run_time_names_layer_input_value_and_position(tmp_path):
    model = _scatter_nd_ir(tmp_path, [5, 4], [[0], [1], [9], [3], [1]])
    with pytest.raises(irscatter.ExecutionError) as info:
        model.run({"data": np.zeros((4, 4), np.float32), "upd": np.ones((5, 4), np.float32)})
    assert 'layer 3 "scatter" (ScatterNDUpdate-15) input 1: index component 9 at position [2, 0] ' \
           "is out of range [-4, 3]" in str(info.value)


def test_a_valid_scatter_ir_runs(tmp_path):
    model = _scatter_nd_ir(tmp_path, [5, 4])
    out = model.run({"data": np.zeros((4, 4), np.float32), "upd": np.ones((5, 4), np.float32)})["out"]
    assert out.tolist() == [[1] * 4, [2] * 4, [1] * 4, [1] * 4]


def test_every_op_of_every_opset_openvino_defines_has_a_kernel():
    """The opset is complete: each type in each of OpenVINO's opset tables resolves to a kernel,
    and `irscatter ops --json` lists that version under that opset."""
    import json

    from irscatter.cli import main
    from irscatter.ir.opset_tables import OPSETS

    missing = [f"{t} in opset{n}" for n, types in OPSETS.items() for t in types
               if registry.resolve(t, f"opset{n}").cls is None]
    assert missing == []
    import contextlib
    import io
    listing = io.StringIO()
    with contextlib.redirect_stdout(listing):
        assert main(["ops", "--json"]) == 0
    listed = {(op["type"].lower(), n) for op in json.loads(listing.getvalue()) for n in op["opsets"]}
    wanted = {("const" if t == "Constant" else t.lower(), f"opset{n}") for n, types in OPSETS.items() for t in types}
    assert wanted - listed == set()


class _Lists(OpAttrs):
    ints: IntList = ()
    floats: FloatList = ()


@pytest.mark.parametrize("field, text", [("ints", "1,\u0663"), ("ints", "1_000"), ("floats", "\u0663.5"),
                                         ("floats", "0.5,1_0.0"), ("ints", "\uff11")])
def test_list_attributes_read_numbers_as_openvino_does_not_as_python_does(field, text):
    """Python's int() and float() read digits of other scripts and underscores; OpenVINO does not."""
    with pytest.raises(ValueError, match="comma-separated list of"):
        _Lists.model_validate({field: text})
    assert _Lists.model_validate({"ints": " -3, +4 ", "floats": "1e3, -inf"}) == _Lists(ints=(-3, 4), floats=(1e3, -np.inf))


def test_the_functional_api_writes_float_list_attributes_in_full():
    from irscatter.ops.functional import attr_text, make_op

    assert attr_text([2.5, 0.5]) == "2.5,0.5" and attr_text([2.0, -1]) == "2,-1"  # whole floats suit integer lists
    assert float(attr_text([np.float32(0.1)])) == float(np.float32(0.1))  # the same number, read back
    op = make_op(registry.find("PriorBoxClustered", "opset1"), {"width": [2.5], "height": [3.5], "variance": [0.1], "offset": 0.5})
    assert (op.attrs.width, op.attrs.height, op.attrs.variance) == ((2.5,), (3.5,), (0.1,))



def test_the_drafts_are_the_opset_pages_openvino_does_not_ship_yet():
    """opsets.DRAFTS lists exactly the versioned names of the newest opset's spec pages that the
    pinned OpenVINO's table of that opset lacks."""
    import re

    from irscatter.ir.opset_tables import OPSETS
    from irscatter.ir.opsets import DRAFTS

    pages = OP_SPECS
    if not pages.is_dir():
        pytest.skip("the OpenVINO spec pages are not present")
    for number, drafts in DRAFTS.items():
        named = set()
        for page in pages.glob(f"*/*-{number}.rst"):
            m = re.search(r"\*\*Versioned name\*\*: \*([A-Za-z0-9]+)-(\d+)\*", page.read_text())
            if m and m.group(1) not in OPSETS[number]:
                named.add((m.group(1), int(m.group(2))))
        assert named == set(drafts.items())


def test_a_draft_op_resolves_in_its_opset_and_names_itself_when_it_has_no_kernel():
    from irscatter.ir import opsets

    answer = opsets.lookup("atan2", "opset17")
    assert (answer.canonical, answer.version, answer.draft) == ("Atan2", 17, True)
    assert opsets.lookup("Atan2", "opset16").label == "not-in-opset"
    found = registry.resolve("Atan2", "opset17")
    if found.cls is None:
        assert found.label == "no-kernel" and "a draft op of opset17" in found.message
    else:
        assert "does not ship it yet" in found.draft and registry.opsets_of(found.cls) == ["opset17"]


@pytest.mark.parametrize("type_, attrs, inputs, output", [
    ("Atan2", {}, [("y", np.array([1, -1], np.float32)), ("x", np.array([0, -1], np.float32))],
     ((2,), np.float32, [np.pi / 2, -3 * np.pi / 4])),
    ("Bincount", {"minlength": 4}, [("data", np.array([1, 1, 2], np.int32))], ((-1,), np.int64, [0, 2, 1, 0])),
    ("RandomPoisson", {"global_seed": 150, "op_seed": 69, "alignment": "pytorch"},
     [("input", np.arange(1, 10, dtype=np.float32))], ((9,), np.float32, [1, 2, 2, 2, 3, 8, 9, 11, 5])),
])
def test_a_draft_op_with_a_kernel_validates_with_a_draft_warning_and_runs(tmp_path, type_, attrs, inputs, output):
    from helpers import one_layer_ir

    shape, dtype, values = output
    xml = one_layer_ir(tmp_path, type_, "opset17", attrs, [(n, np.zeros_like(a)) for n, a in inputs],
                       [(shape, dtype)])
    findings = irscatter.validate(xml).findings
    assert [(f.severity, f.code) for f in findings] == [("warning", "draft-op")]
    assert f"{type_}-17 is a draft of opset17" in findings[0].message
    got = next(iter(irscatter.read_model(xml).run(dict(inputs)).values()))
    assert got.dtype == dtype and np.allclose(got, np.array(values, dtype))


def test_an_attribute_schema_is_built_when_first_parsed_and_then_parses_as_ever():
    class Fresh(OpAttrs):
        sizes: IntList = ()

    assert not Fresh.__pydantic_complete__  # importing a module builds none of its op schemas
    assert Fresh.model_validate({"sizes": "1,2", "unknown": "x"}).sizes == (1, 2)
    assert Fresh.__pydantic_complete__
