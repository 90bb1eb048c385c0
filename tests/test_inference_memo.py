"""Shared inference (checks/infer.py `InferenceMemo`): a layer whose signature matches an earlier
layer's gets that layer's outputs. Sharing must change nothing a user can see: every inferred
type, shape and value, every finding and every error is what inferring each layer gives."""

from pathlib import Path

import numpy as np
import pytest
from helpers import layer, net, param, port, result

import irscatter
from irscatter.checks import analysis, infer

ROOT = Path(__file__).resolve().parent.parent


def _loads(xml: Path) -> bool:
    try:
        irscatter.read_model(xml)
    except irscatter.IRError:  # the loader's own findings: nothing reaches inference
        return False
    return True


MODELS = [xml for xml in sorted((ROOT / "models").glob("*/model.xml"))
          + sorted((ROOT / "tests" / "corpus" / "validate").glob("*.xml")) if _loads(xml)]


def _analyze(model, share: bool, monkeypatch):
    original = infer.InferenceMemo.__init__

    def made(self, share: bool = True, _allowed: bool = share) -> None:  # as the pass asks, if allowed
        original(self, share=share and _allowed)
    monkeypatch.setattr(infer.InferenceMemo, "__init__", made)
    return analysis.analyze(model, collect=True)


def _seen(result):
    infos = {k: (v.etype, str(v.shape), None if v.value is None else np.asarray(v.value).tolist())
             for k, v in result.infos.items()}
    findings = [(f.severity, f.code, f.message, str(f.layer), f.port, f.line) for f in result.findings]
    return infos, findings


@pytest.mark.parametrize("xml", MODELS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sharing_changes_nothing_on_the_bundled_models_and_the_validate_corpus(xml, monkeypatch):
    model = irscatter.read_model(xml)
    shared = _seen(_analyze(model, True, monkeypatch))
    alone = _seen(_analyze(model, False, monkeypatch))
    assert shared == alone


def _chain(shapes):
    """Parameters of the given shapes, each added to itself by an Add of its own."""
    layers, edges = [], []
    for i, shape in enumerate(shapes):
        p, a, r = 3 * i, 3 * i + 1, 3 * i + 2
        layers += [param(p, f"x{i}", shape),
                   layer(a, f"add{i}", "Add", data={"auto_broadcast": "numpy"},
                         inputs=[port(0, "FP32", shape), port(1, "FP32", shape)],
                         outputs=[port(2, "FP32", shape)]),
                   result(r, f"out{i}", shape)]
        edges += [(p, 0, a, 0), (p, 0, a, 1), (a, 2, r, 0)]
    return irscatter.parse_model(net(layers, edges))


def test_layers_alike_share_and_others_do_not(monkeypatch):
    model = _chain([[2, 3], [2, 3], [4]])
    result = _analyze(model, True, monkeypatch)
    first, second, third = result.infos[(1, 0)], result.infos[(4, 0)], result.infos[(7, 0)]
    assert second is first  # the same signature: one inference
    assert third.shape.to_tuple() == (4,) and third is not first


def test_an_error_is_reported_for_every_layer_that_has_it(monkeypatch):
    shapes = [[2, 3], [2, 3]]
    layers, edges = [], []
    for i, shape in enumerate(shapes):
        p, q, a, r = 4 * i, 4 * i + 1, 4 * i + 2, 4 * i + 3
        layers += [param(p, f"x{i}", shape), param(q, f"y{i}", [4, 5]),
                   layer(a, f"add{i}", "Add", data={"auto_broadcast": "numpy"},
                         inputs=[port(0, "FP32", shape), port(1, "FP32", [4, 5])], outputs=[port(2, "FP32", shape)]),
                   result(r, f"out{i}", shape)]
        edges += [(p, 0, a, 0), (q, 0, a, 1), (a, 2, r, 0)]
    model = irscatter.parse_model(net(layers, edges))
    errors = [f for f in _analyze(model, True, monkeypatch).findings if f.severity == "error"]
    assert sorted(f.layer.name for f in errors) == ["add0", "add1"]
    assert {f.code for f in errors} == {"broadcast"}


def test_an_op_that_keeps_state_while_inferring_infers_every_layer(monkeypatch):
    # Convert keeps its source type for its kernel: each layer's op must hold its own.
    layers, edges = [], []
    for i, (et, prec) in enumerate([("f32", "FP32"), ("f32", "FP32")]):
        p, c, r = 3 * i, 3 * i + 1, 3 * i + 2
        layers += [param(p, f"x{i}", [3], et, prec),
                   layer(c, f"convert{i}", "Convert", data={"destination_type": "i32"},
                         inputs=[port(0, prec, [3])], outputs=[port(1, "I32", [3])]),
                   result(r, f"out{i}", [3], "I32")]
        edges += [(p, 0, c, 0), (c, 1, r, 0)]
    model = irscatter.parse_model(net(layers, edges))
    out = model.run({"x0": np.array([1.5, -2.5, 3], np.float32), "x1": np.array([7.9, 0, -1], np.float32)})
    np.testing.assert_array_equal(out["out0"], [1, -2, 3])
    np.testing.assert_array_equal(out["out1"], [7, 0, -1])
