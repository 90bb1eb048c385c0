"""GatedDeltaNet (domain `extension`). Judged by OpenVINO's CPU plugin where it runs the op (f32:
the plugin reads the layer from an IR file once it is loaded, out of process in
tests/data/internal_ops_openvino.py), and on every case, every type included, by the page's
PyTorch code transcribed in page_gated_delta_net.py. Inputs are never written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from helpers import one_layer_ir, run_internal_ops_openvino
from page_gated_delta_net import gated_delta_net as page

import irscatter
from irscatter import examples
from irscatter.ops.functional import call
from irscatter.ops.internal.gated_delta_net import GatedDeltaNet

NAMES = GatedDeltaNet.inputs
PAGE = (Path(__file__).resolve().parents[4] / "shared" / "specs" / "openvino-docs" / "operation-sets"
        / "operation-specs" / "internal" / "gated-delta-net.rst")


def make(batch, steps, heads, value_heads, size, value_size, dtype=np.float32, seed=0):
    """The six inputs: a decaying gate (log-space, <= 0) and a beta in (0, 1), as models feed them."""
    rng = np.random.default_rng(seed)
    normal = rng.standard_normal
    arrays = [normal((batch, steps, heads, size)), normal((batch, steps, heads, size)),
              normal((batch, steps, value_heads, value_size)), normal((batch, value_heads, size, value_size)) * 0.5,
              -np.abs(normal((batch, steps, value_heads))) * 0.5, 1 / (1 + np.exp(-normal((batch, steps, value_heads))))]
    return [a.astype(dtype) for a in arrays]


CASES = {  # (batch, steps, heads, value heads, key size, value size), attributes
    "one-head": ((1, 3, 1, 1, 4, 5), {}),
    "heads": ((2, 4, 2, 2, 3, 4), {}),
    "grouped-query": ((1, 3, 2, 4, 4, 3), {}),
    "l2norm": ((2, 3, 2, 4, 4, 3), {"use_qk_l2norm": True}),
    "l2norm-eps": ((1, 3, 1, 2, 4, 2), {"use_qk_l2norm": True, "q_l2_norm_eps": 0.5, "k_l2_norm_eps": 2.0}),
    "l2norm-openvino-name": ((1, 2, 2, 2, 3, 3), {"fuse_qk_l2norm": True}),
    "l2norm-off": ((1, 2, 2, 2, 3, 3), {"use_qk_l2norm": False, "fuse_qk_l2norm": False}),
}
EMPTY = {"no-steps": (1, 0, 2, 2, 3, 2), "no-batch": (0, 2, 1, 1, 3, 2), "no-heads": (1, 2, 0, 0, 3, 2),
         "no-value-size": (1, 2, 1, 2, 3, 0)}
TYPES = {"f32": (np.float32, 1e-5), "f64": (np.float64, 1e-12), "f16": (np.float16, 3e-3),
         "bf16": (ml_dtypes.bfloat16, 3e-2)}


def run(arrays, attrs):
    kept = [a.copy() for a in arrays]
    out = call(GatedDeltaNet, arrays, attrs)
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(arrays, kept))  # never written
    return out


def page_of(arrays, attrs):
    on = attrs.get("use_qk_l2norm", attrs.get("fuse_qk_l2norm", False))
    eps = {k: v for k, v in attrs.items() if k.endswith("eps")}
    return page(*(a.astype(np.float64) for a in arrays), use_qk_l2norm=on, **eps)


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("name", CASES)
def test_the_page_s_recurrence(name, kind):
    dims, attrs = CASES[name]
    dtype, rtol = TYPES[kind]
    arrays = make(*dims, dtype=dtype)
    out, state = run(arrays, attrs)
    want_out, want_state = page_of(arrays, attrs)
    assert out.dtype == state.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.astype(np.float64), want_out, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(state.astype(np.float64), want_state, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", EMPTY)
def test_size_zero_dimensions(name):
    arrays = make(*EMPTY[name])
    out, state = run(arrays, {})
    assert out.shape == arrays[2].shape and state.shape == arrays[3].shape
    want_out, want_state = page_of(arrays, {})
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state, want_state, rtol=1e-5, atol=1e-6)  # no steps: the state as it came


def test_no_key_size_gives_zeros():
    arrays = make(1, 2, 1, 1, 0, 3)
    out, state = run(arrays, {})
    assert not out.any() and state.shape == (1, 1, 0, 3)


def test_non_finite_values_go_where_the_arithmetic_takes_them():
    arrays = make(1, 4, 1, 2, 3, 2, dtype=np.float64)
    arrays[2][0, 1, 0, 0] = np.nan  # value head 0's second step: NaN from there on in that head
    arrays[4][0, 2, 1] = -np.inf  # value head 1's third step: the state decays to exactly 0
    out, state = run(arrays, {})
    want_out, want_state = page_of(arrays, {})
    np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(state, want_state, rtol=1e-12, atol=1e-12)
    assert np.isnan(out[0, 1:, 0, 0]).all() and not np.isnan(out[0, :, 1]).any()


@pytest.mark.parametrize(("label", "change", "attrs"), [
    ("gdn-rank", {0: np.zeros((1, 3, 8), np.float32)}, {}),
    ("gdn-shape", {1: np.zeros((1, 3, 2, 5), np.float32)}, {}),
    ("gdn-shape", {4: np.zeros((1, 2, 4), np.float32)}, {}),
    ("gdn-heads", {2: np.zeros((1, 3, 3, 3), np.float32), 3: np.zeros((1, 3, 4, 3), np.float32),
                   4: np.zeros((1, 3, 3), np.float32), 5: np.zeros((1, 3, 3), np.float32)}, {}),
    ("gdn-attributes", {}, {"use_qk_l2norm": True, "fuse_qk_l2norm": False}),
    ("same-element-type", {1: np.zeros((1, 3, 2, 4), np.float16)}, {}),
    ("float-type", {0: np.zeros((1, 3, 2, 4), np.int32)}, {}),
    ("attributes", {}, {"q_l2_norm_eps": 0.0}),
])
def test_refusals(label, change, attrs):
    arrays = make(1, 3, 2, 4, 4, 3)
    arrays = [change.get(i, a) for i, a in enumerate(arrays)]
    with pytest.raises(irscatter.IRError) as caught:
        call(GatedDeltaNet, arrays, attrs)
    assert caught.value.label == label, str(caught.value)


@pytest.mark.skipif(not PAGE.is_file(), reason="the spec pages are not beside this checkout")
def test_the_page_s_example_runs():
    (example,) = examples.run_document(PAGE)
    assert example.ok and example.status == "shape-checked", example.reason


@pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="openvino is not installed")
def test_openvino_s_cpu_plugin_agrees(tmp_path):
    """Each case as one IR file that irscatter reads and runs; OpenVINO runs the same layer with
    the switch under the name it reads (fuse_qk_l2norm), and must agree on both outputs."""
    jobs, runs = [], []
    for name, (dims, attrs) in CASES.items():
        arrays = make(*dims)
        value_shape, state_shape = arrays[2].shape, arrays[3].shape
        outputs = [(value_shape, np.float32), (state_shape, np.float32)]
        folder = tmp_path / name
        folder.mkdir()
        xml = one_layer_ir(folder, "GatedDeltaNet", "extension", attrs, list(zip(NAMES, arrays)), outputs)
        theirs = {"fuse_qk_l2norm": attrs.get("use_qk_l2norm", attrs.get("fuse_qk_l2norm", False)),
                  **{k: v for k, v in attrs.items() if k.endswith("eps")}}
        ov_xml = one_layer_ir(folder, "GatedDeltaNet", "extension", theirs, list(zip(NAMES, arrays)), outputs,
                              name="openvino")
        jobs.append({"kind": "ir", "xml": ov_xml, "feeds": arrays})
        runs.append(irscatter.read_model(xml).run(dict(zip(NAMES, arrays))))
    for name, ours, theirs in zip(CASES, runs, run_internal_ops_openvino(tmp_path, jobs)):
        for k in range(2):
            np.testing.assert_allclose(ours[f"out{k}"], theirs[f"out/{k}"], rtol=1e-4, atol=1e-5, err_msg=name)
