"""Property-based fuzzing: random mutations of the bundled models (attribute values, dims,
edges, element types, deleted or repeated elements, byte flips in the `.bin`) must load and
run or stop with an `IRError`, within a time bound. Any other exception is a bug."""

import copy
import os
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

import irscatter
from irscatter import limits
from irscatter.ops import registry
from irscatter.runtime.inputs import random_array

MODELS = Path(__file__).resolve().parent.parent / "models"
BASES = sorted(p.name for p in MODELS.iterdir() if (p / "model.xml").exists())
TIME_BOUND = 5.0  # seconds for one load + prepare + run of a mutated model
EXAMPLES = int(os.environ.get("IRSCATTER_FUZZ_EXAMPLES", examples(3000, 1000)))  # raise it for a longer hunt

_TEXT = st.one_of(
    st.sampled_from(["", "-1", "0", "1", "2", "-2", "7", "99999999999999999999", "1e3", "nan", "true", "false",
                     "none", "sum", "mean", "f32", "i64", "bf16", "u1", "string", "dynamic", "?", "1..3", "...",
                     "1,2", "0,-1", "opset1", "opset999", "irscatter1", "Add", "Const", "\u00e9", " 3 "]),
    st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff"), max_size=6),
    st.integers(-5, 70000).map(str),
)


def _load_base(name):
    folder = MODELS / name
    with np.load(folder / "inputs.npz") as f:
        feeds = {k: f[k] for k in f.files}
    return (folder / "model.xml").read_bytes(), (folder / "model.bin").read_bytes(), feeds


BASE_FILES = {name: _load_base(name) for name in BASES}
OPS = [cls for cls in registry.supported() if cls.type_name not in ("Parameter", "Result")]


def _elements(root, xpath):
    return root.xpath(xpath)


def _mutate(draw, root, weights: bytearray) -> str:
    kind = draw(st.sampled_from(["attr", "dim", "edge", "etype", "delete", "repeat", "bin", "layer-attr", "retype"]))
    if kind == "bin":
        if not weights:
            return "bin (empty)"
        for _ in range(draw(st.integers(1, 8))):
            weights[draw(st.integers(0, len(weights) - 1))] = draw(st.integers(0, 255))
        if draw(st.booleans()):
            del weights[draw(st.integers(0, len(weights))):]  # truncate too
        return "bin"
    targets = {
        "attr": "//data",
        "dim": "//dim",
        "edge": "//edge",
        "etype": "//data[@element_type] | //port[@precision]",
        "delete": "//layer | //port | //edge | //dim | //data | //body",
        "repeat": "//layer | //port | //edge | //dim",
        "layer-attr": "//layer",
        "retype": "//layer",
    }[kind]
    nodes = _elements(root, targets)
    if not nodes:
        return f"{kind} (nothing)"
    node = draw(st.sampled_from(nodes))
    if kind == "dim":
        node.text = draw(_TEXT)
    elif kind == "attr" and node.attrib:
        key = draw(st.sampled_from(sorted(node.attrib)))
        node.set(key, draw(_TEXT))
    elif kind == "edge":
        key = draw(st.sampled_from(["from-layer", "from-port", "to-layer", "to-port"]))
        node.set(key, draw(_TEXT))
    elif kind == "etype":
        key = "element_type" if node.get("element_type") is not None else "precision"
        node.set(key, draw(st.sampled_from(["f32", "f16", "bf16", "i8", "u8", "i32", "i64", "u1", "u4", "i4",
                                            "boolean", "string", "f64", "FP32", "I64", "dynamic", "f8e4m3",
                                            "nf4", "bogus", ""])))
    elif kind == "retype":  # another op on the same ports: every kernel meets unexpected inputs
        cls = draw(st.sampled_from(OPS))
        node.set("type", cls.type_name)
        node.set("version", f"{'opset' if cls.domain == 'opset' else cls.domain}{cls.version}")
    elif kind == "layer-attr":
        key = draw(st.sampled_from(["id", "type", "version", "name"]))
        node.set(key, draw(_TEXT))
    elif kind == "delete":
        node.getparent().remove(node)
    elif kind == "repeat":
        node.addnext(copy.deepcopy(node))
    return kind


@st.composite
def mutated_model(draw):
    name = draw(st.sampled_from(BASES))
    xml, weights, feeds = BASE_FILES[name]
    root = etree.fromstring(xml)
    buf = bytearray(weights)
    kinds = [_mutate(draw, root, buf) for _ in range(draw(st.integers(1, 3)))]
    return name, kinds, etree.tostring(root), bytes(buf), feeds


def _feeds_for(compiled, saved):
    """The saved inputs where they still fit, random ones of the declared type otherwise."""
    rng = np.random.default_rng(0)
    feeds = {}
    for spec in compiled.inputs:
        value = saved.get(spec.name)
        if value is None or not spec.shape.accepts(value.shape):
            shape = tuple(d.min if d.is_static else 2 for d in spec.shape.dims) if spec.shape.dims is not None else (2,)
            value = random_array(spec.etype, shape, rng)
        feeds[spec.name] = value
    return feeds


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_model())
def test_a_mutated_model_runs_or_raises_an_irerror(case):
    name, kinds, xml, weights, saved = case
    start = time.perf_counter()
    try:
        # A mutated size may ask for a legitimately large tensor: small limits keep each
        # example fast (the limits themselves are what is being exercised).
        with limits.using(tensor_bytes=16 * 2**20):
            model = irscatter.parse_model(xml, weights, source=f"{name}/model.xml")
            compiled = model.compile()
            compiled.run(_feeds_for(compiled, saved))
    except irscatter.IRError as e:
        assert str(e), "an IRError must say what is wrong"
    except MemoryError:
        pytest.fail(f"{name} after {kinds}: a MemoryError escaped; sizes must be checked before allocating")
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_BOUND, f"{name} after {kinds} took {elapsed:.1f} s"


# --- what the fuzzer found, kept as plain tests ----------------------------------------------------


def test_non_ascii_digits_are_not_numbers():
    """`str.isdigit` accepts a superscript two, which `int()` refuses."""
    xml, weights, _ = BASE_FILES["affine_chain"]
    with pytest.raises(irscatter.LoadError, match="offset") as err:
        irscatter.parse_model(xml.replace(b'offset="0"', b'offset="\xc2\xb2"', 1), weights)
    assert err.value.label == "const-attribute"


def test_gather_from_an_empty_axis_fills_zeros():
    from irscatter.ir.graph import Layer
    from irscatter.ops.indexing.gather import Gather8

    op = Gather8(Layer(id=1, name="g", type="Gather", version="opset8", attrs={"batch_dims": "0"}))
    out = op.compute(np.zeros(0, np.int64), np.array(1), np.array(0))
    assert out.shape == () and out == 0
