"""GatedResidual (domain `gpu_opset`) against the page's equations transcribed in
page_gated_residual.py: OpenVINO has no such op to run (not in its sources, not in the pinned
build), so the page is the only oracle. READ (with and without the write gate), WRITE and
FINAL_MIX; both gain conventions; residual ranks 2 to 4 with size-0 leading dims; inf and NaN;
every float type and output_type; every label, through IR files where the layer's arity matters."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import one_layer_ir
from internal_checks import BF16, assert_close, run_unwritten
from page_gated_residual import read, write

import irscatter
from irscatter.errors import IRError
from irscatter.ops.internal.gated_residual import GatedResidual

C, D, L = 3, 4, 2


def _values(shape, dtype=np.float32, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def gated_residual(arrays, **attrs):
    out = run_unwritten(GatedResidual, arrays, {"hc_count": C, "hidden_size": D, "lowrank": L, **attrs})
    return out if isinstance(out, tuple) else (out,)


def read_inputs(lead, dtype=np.float32, seed=0, inject=True):
    arrays = [_values((*lead, C * D), dtype, seed), _values(C * D, dtype, seed + 1, 0.3),
              _values((L, C * D), dtype, seed + 2, 0.5), _values((C * D, L), dtype, seed + 3, 0.5)]
    return arrays + ([_values((C, C * D), dtype, seed + 4, 0.5)] if inject else [])


READ_CASES = {
    "read-gate-rank3": ((2, 3), {"mode": 0, "produce_write_gate": True}, np.float32),
    "read-rank2": ((5,), {"mode": 0}, np.float32),
    "read-rank4-gain-as-is": ((2, 1, 3), {"mode": 0, "produce_write_gate": True, "norm_gain_plus_one": False},
                              np.float32),
    "final-mix": ((1, 4), {"mode": 2, "epsilon": 0.1}, np.float32),
    "size-0-rows": ((0, 3), {"mode": 0, "produce_write_gate": True}, np.float32),
    "f64": ((2, 2), {"mode": 0, "produce_write_gate": True}, np.float64),
    "f16": ((2, 2), {"mode": 0, "produce_write_gate": True}, np.float16),
    "bf16": ((2, 2), {"mode": 2}, BF16),
}


@pytest.mark.parametrize("name", READ_CASES)
def test_read_and_final_mix_match_the_page(name):
    lead, attrs, dtype = READ_CASES[name]
    gate = attrs.get("produce_write_gate", False)
    arrays = read_inputs(lead, dtype, inject=gate)
    ours = gated_residual(arrays, **attrs)
    keys = {k: attrs[k] for k in ("epsilon", "norm_gain_plus_one") if k in attrs}
    mixed, write_gate = read(*arrays, hc_count=C, hidden_size=D, **keys)
    assert len(ours) == (2 if gate else 1) and ours[0].shape == (*lead, D) and ours[0].dtype == dtype
    assert_close(ours[0], mixed, dtype)
    if gate:
        assert ours[1].shape == (*lead, C)
        assert_close(ours[1], write_gate, dtype)
        assert np.all((ours[1] > 0) & (ours[1] < 2))


def test_read_with_non_finite_rows():
    arrays = read_inputs((3,))
    arrays[0][0, 1] = np.inf  # branch 0 of row 0 becomes NaN, and the gates of the whole row
    arrays[0][1, D + 2] = np.nan
    ours = gated_residual(arrays, mode=0, produce_write_gate=True)
    mixed, write_gate = read(*arrays, hc_count=C, hidden_size=D)
    assert_close(ours[0], mixed, np.float32)
    assert_close(ours[1], write_gate, np.float32)
    assert np.isnan(ours[0][:2]).all() and np.isfinite(ours[0][2]).all()


@pytest.mark.parametrize("lead, dtype", [((2, 3), np.float32), ((4,), np.float16), ((1, 0, 2), np.float32),
                                         ((2,), np.float64)])
def test_write_matches_the_page(lead, dtype):
    residual, y = _values((*lead, C * D), dtype), _values((*lead, D), dtype, 1)
    gate = (2 / (1 + np.exp(-_values((*lead, C), np.float64, 2)))).astype(dtype)
    (ours,) = gated_residual([residual, y, gate], mode=1)
    assert ours.shape == residual.shape and ours.dtype == dtype
    assert_close(ours, write(residual, y, gate, hc_count=C, hidden_size=D), dtype)


def test_write_carries_inf_and_nan():
    residual, y, gate = _values((2, C * D)), _values((2, D), seed=1), np.full((2, C), 0.5, np.float32)
    y[0, 1], gate[1, 2] = np.inf, np.nan
    (ours,) = gated_residual([residual, y, gate], mode=1)
    assert_close(ours, write(residual, y, gate, hc_count=C, hidden_size=D), np.float32)


@pytest.mark.parametrize("output_type, wanted", [("f16", np.float16), ("f32", np.float32), ("bf16", BF16),
                                                 ("dynamic", np.float64), ("undefined", np.float64)])
def test_output_type(output_type, wanted):
    arrays = read_inputs((2,), np.float64)
    mixed, gate = gated_residual(arrays, mode=0, produce_write_gate=True, output_type=output_type)
    assert mixed.dtype == wanted and gate.dtype == wanted
    expected, _ = read(*arrays, hc_count=C, hidden_size=D)
    assert_close(mixed, expected, wanted)
    (written,) = gated_residual([arrays[0], _values((2, D), np.float64), _values((2, C), np.float64)], mode=1,
                                output_type=output_type)
    assert written.dtype == wanted


@pytest.mark.parametrize("attrs, arrays, label", [
    ({"mode": 3}, read_inputs((2,), inject=False), "gr-mode"),
    ({"mode": 2, "produce_write_gate": True}, read_inputs((2,)), "gr-mode"),
    ({"mode": 0, "hc_count": 0}, read_inputs((2,), inject=False), "gr-sizes"),
    ({"mode": 0, "lowrank": 0}, read_inputs((2,), inject=False), "gr-sizes"),
    ({"mode": 0, "produce_write_gate": True}, read_inputs((2,), inject=False), "gr-arity"),
    ({"mode": 1}, read_inputs((2,), inject=False), "gr-arity"),
    ({"mode": 0, "hidden_size": 5}, read_inputs((2,), inject=False), "gr-shape"),
    ({"mode": 0}, [_values(C * D)] + read_inputs((2,), inject=False)[1:], "gr-shape"),
    ({"mode": 0}, read_inputs((2,), inject=False)[:2] + [_values((L + 1, C * D)), _values((C * D, L))], "gr-shape"),
    ({"mode": 0, "produce_write_gate": True}, read_inputs((2,), inject=False) + [_values((C + 1, C * D))], "gr-shape"),
    ({"mode": 1}, [_values((2, C * D)), _values((2, D + 1)), _values((2, C))], "gr-shape"),
    ({"mode": 1}, [_values((2, C * D)), _values((2, D)), _values((3, C))], "gr-shape"),
    ({"mode": 0, "output_type": "i32"}, read_inputs((2,), inject=False), "gr-output-type"),
    ({"mode": 1}, [np.ones((2, C * D), np.int32), np.ones((2, D), np.int32), np.ones((2, C), np.int32)], "float-type"),
    ({"mode": 1}, [_values((2, C * D)), _values((2, D), np.float16), _values((2, C))], "same-element-type"),
])
def test_gated_residual_refuses(attrs, arrays, label):
    with pytest.raises(IRError) as caught:
        gated_residual(arrays, **attrs)
    assert caught.value.label == label, caught.value


def _layer(tmp_path, attrs, arrays, outputs, name="model"):
    texts = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in
             {"hc_count": C, "hidden_size": D, "lowrank": L, **attrs}.items()}
    return one_layer_ir(tmp_path, "GatedResidual", "gpu_opset", texts,
                        [(f"in{i}", a) for i, a in enumerate(arrays)], outputs, name=name)


def test_a_read_layer_with_its_write_gate_runs_from_an_ir_file(tmp_path):
    arrays = read_inputs((1, 2))
    path = _layer(tmp_path, {"mode": 0, "produce_write_gate": True}, arrays,
                  [((1, 2, D), np.float32), ((1, 2, C), np.float32)])
    out = list(irscatter.read_model(path).run({f"in{i}": a for i, a in enumerate(arrays)}).values())
    mixed, gate = read(*arrays, hc_count=C, hidden_size=D)
    assert_close(out[0], mixed, np.float32)
    assert_close(out[1], gate, np.float32)


def test_a_layer_declaring_outputs_its_mode_lacks_is_refused(tmp_path):
    arrays = read_inputs((1, 2), inject=False)
    path = _layer(tmp_path, {"mode": 2}, arrays, [((1, 2, D), np.float32), ((1, 2, C), np.float32)])
    with pytest.raises(IRError) as caught:
        irscatter.compile_model(path)
    assert caught.value.label == "gr-arity" and "has 1 output" in str(caught.value)


def test_a_write_whose_dynamic_shapes_hid_a_mismatch_is_refused_when_it_runs(tmp_path):
    residual, y, gate = _values((2, C * D)), _values((2, D)), _values((2, C))
    path = _layer(tmp_path, {"mode": 1}, [residual, y, gate], [((2, C * D), np.float32)])
    text = path.read_text().replace('shape="2,4"', 'shape="?,4"').replace('names="in1"><dim>2<', 'names="in1"><dim>-1<')
    path.write_text(text)
    with pytest.raises(IRError) as caught:
        irscatter.read_model(path).run({"in0": residual, "in1": _values((1, D)), "in2": gate})
    assert caught.value.label == "gr-shape", caught.value
