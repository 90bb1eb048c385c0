"""PagedGatedDeltaNet (domain `extension`). Judged by OpenVINO's CPU plugin, which reads and runs
the layer (out of process, tests/data/internal_ops_openvino.py): outputs and the state table it
writes in place, f32. Every case, every type included, is also judged by the transcription in
page_gated_delta_net.py (GatedDeltaNet's recurrence, the paged page's reads and writes of
blocks). Also: two steps equal GatedDeltaNet over the whole sequence, and the table is written
only when donated."""

from __future__ import annotations

import importlib.util

import ml_dtypes
import numpy as np
import pytest
from helpers import one_layer_ir, run_internal_ops_openvino
from page_gated_delta_net import paged_gated_delta_net as page

import irscatter
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import call, make_op
from irscatter.ops.internal.gated_delta_net import GatedDeltaNet
from irscatter.ops.internal.paged_gated_delta_net import PagedGatedDeltaNet

NAMES = PagedGatedDeltaNet.inputs
I32 = np.int32


def make(sequences, *, heads=2, value_heads=4, size=4, value_size=3, blocks=8, dtype=np.float32, index=I32, seed=0):
    """The eleven inputs of a step. `sequences`: (past length, new tokens, cache interval, blocks)."""
    rng = np.random.default_rng(seed)
    tokens = sum(new for _, new, _, _ in sequences)
    arrays = [rng.standard_normal((tokens, heads, size)), rng.standard_normal((tokens, heads, size)),
              rng.standard_normal((tokens, value_heads, value_size)),
              rng.standard_normal((blocks, value_heads, value_size, size)) * 0.5,
              -np.abs(rng.standard_normal((tokens, value_heads))) * 0.5,
              1 / (1 + np.exp(-rng.standard_normal((tokens, value_heads))))]
    arrays = [a.astype(dtype) for a in arrays]
    arrays += [np.cumsum([0] + [new for _, new, _, _ in sequences]).astype(index),
               np.array([b for *_, own in sequences for b in own], index),
               np.cumsum([0] + [len(own) for *_, own in sequences]).astype(index),
               np.array([past for past, *_ in sequences], index), np.array([i for _, _, i, _ in sequences], index)]
    return arrays


def step(arrays, attrs=None):
    """The output and the table after the step (the inputs untouched)."""
    op = make_op(PagedGatedDeltaNet, attrs or {})
    op.infer(*(TensorInfo.of(a) for a in arrays))
    table = arrays[3].copy()
    return op.step(tuple(arrays), table), table


CASES = {  # the page's use cases, and what else the block rules meet
    "prefill-no-past": ([(0, 5, 2, [0, 1, 2, 3])], {}),
    "prefill-past-on-the-interval": ([(4, 5, 2, [6, 1, 2, 7])], {}),
    "prefill-past-off-the-interval": ([(3, 6, 4, [5, 1, 2])], {}),
    "decode-on-the-interval": ([(7, 1, 4, [3, 6])], {}),
    "decode-off-the-interval": ([(6, 1, 4, [3, 6])], {}),
    "no-interval": ([(2, 3, 0, [4, 0]), (5, 2, -1, [1, 6])], {}),
    "writes-past-the-table": ([(0, 7, 2, [5, 1])], {}),
    "batch-of-sequences": ([(3, 5, 2, [5, 1, 2, 7]), (0, 0, 2, [6]), (7, 1, 4, [3, 6]), (2, 3, 0, [4, 0])], {}),
    "one-head-each": ([(1, 4, 3, [2, 3, 4])], {"heads": 1, "value_heads": 1}),
    "l2norm": ([(3, 5, 2, [5, 1, 2, 7]), (7, 1, 4, [3, 6])], {"attrs": {"use_qk_l2norm": True}}),
    "l2norm-eps": ([(0, 3, 1, [0, 1, 2, 3])], {"attrs": {"use_qk_l2norm": True, "q_l2_norm_eps": 0.5,
                                                          "k_l2_norm_eps": 2.0}}),
    "i64-indices": ([(3, 5, 2, [5, 1, 2, 7])], {"index": np.int64}),
}


def case(name, **more):
    sequences, options = CASES[name]
    options = {**options, **more}
    attrs = options.pop("attrs", {})
    return make(sequences, **options), attrs


def page_of(arrays, attrs):
    floats = [a.astype(np.float64) for a in arrays[:6]]
    return page(*floats, *arrays[6:], **attrs)


@pytest.mark.parametrize("name", CASES)
def test_a_step_follows_the_page(name):
    arrays, attrs = case(name)
    kept = [a.copy() for a in arrays]
    out = call(PagedGatedDeltaNet, arrays, attrs)  # the function form: the table not written
    assert all(np.array_equal(a, b) for a, b in zip(arrays, kept))
    out, table = step(arrays, attrs)
    want_out, want_table = page_of(arrays, attrs)
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(table, want_table, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("dtype", "tolerance"), [(np.float64, 1e-12), (np.float16, 3e-3),
                                                  (ml_dtypes.bfloat16, 3e-2)])
def test_other_float_types(dtype, tolerance):
    arrays, attrs = case("batch-of-sequences", dtype=dtype)
    out, table = step(arrays, attrs)
    assert out.dtype == table.dtype == np.dtype(dtype)
    want_out, want_table = page_of(arrays, attrs)
    np.testing.assert_allclose(out.astype(np.float64), want_out, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(table.astype(np.float64), want_table, rtol=tolerance, atol=tolerance)


def test_steps_carry_the_state_as_gated_delta_net_does():
    """A prefill, then a decode whose block 0 is the block the prefill stored its last state in:
    the outputs are GatedDeltaNet's over the six tokens, started from the first block 0."""
    arrays = make([(0, 5, 2, [0, 1, 2, 3])])
    first, table = step(arrays)
    decode = make([(5, 1, 2, [3, 4])], seed=1)
    decode[3] = table  # the caller's table, carried over; block 3 holds the state after 5 tokens
    second, table = step(decode)
    whole = [np.concatenate([a, b])[None] for a, b in zip(arrays[:3], decode[:3])]
    gates = [np.concatenate([a, b])[None] for a, b in zip(arrays[4:6], decode[4:6])]
    start = arrays[3][0].transpose(0, 2, 1)[None]  # [1, Hv, K, V]
    want, state = call(GatedDeltaNet, [*whole, start, *gates], {})
    np.testing.assert_allclose(np.concatenate([first, second]), want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(table[4], state[0].transpose(0, 2, 1), rtol=1e-5, atol=1e-5)


def test_size_zero_dimensions():
    for options in ({"value_size": 0}, {"heads": 0, "value_heads": 0}):
        arrays = make([(3, 2, 2, [1, 2])], **options)
        out, table = step(arrays)
        assert out.shape == arrays[2].shape and table.shape == arrays[3].shape
    arrays = make([(0, 0, 2, []), (2, 0, 2, [1])])  # no tokens: nothing read or written, no block needed
    out, table = step(arrays)
    assert out.shape == (0, 4, 3) and np.array_equal(table, arrays[3])


def test_non_finite_values_stay_in_their_head_and_sequence():
    arrays = make([(0, 3, 1, [0, 1, 2, 3]), (0, 2, 1, [4, 5, 6])], dtype=np.float64)
    arrays[2][1, 0, 0] = np.inf
    out, table = step(arrays)
    want_out, want_table = page_of(arrays, {})
    np.testing.assert_allclose(out, want_out, rtol=1e-12)
    np.testing.assert_allclose(table, want_table, rtol=1e-12)
    assert not np.isfinite(out[1:3, 0]).all() and np.isfinite(out[3:]).all() and np.isfinite(out[:, 1:]).all()


def _ir(tmp_path, arrays, attrs=None, name="model"):
    return one_layer_ir(tmp_path, "PagedGatedDeltaNet", "extension", attrs or {}, list(zip(NAMES, arrays)),
                        [(arrays[2].shape, arrays[0].dtype)], name=name)


def test_a_model_run_writes_the_table_only_when_donated(tmp_path):
    arrays, _ = case("batch-of-sequences")
    model = irscatter.read_model(_ir(tmp_path, arrays))
    want, table = step(arrays)
    feeds = dict(zip(NAMES, arrays))
    kept = arrays[3].copy()
    np.testing.assert_array_equal(model.run(feeds)["out0"], want)
    np.testing.assert_array_equal(feeds["recurrent_state_table"], kept)
    feeds["recurrent_state_table"].flags.writeable = False
    model.run(feeds, donate=["recurrent_state_table"])  # read-only: not written though donated
    np.testing.assert_array_equal(feeds["recurrent_state_table"], kept)
    feeds["recurrent_state_table"] = kept.copy()
    np.testing.assert_array_equal(model.run(feeds, donate=["recurrent_state_table"])["out0"], want)
    np.testing.assert_array_equal(feeds["recurrent_state_table"], table)


REFUSED = [
    ("pgdn-rank", {0: np.zeros((5, 8), np.float32)}),
    ("pgdn-rank", {9: np.zeros((1, 1), I32)}),
    ("pgdn-shape", {1: np.zeros((5, 2, 5), np.float32)}),
    ("pgdn-shape", {3: np.zeros((8, 4, 4, 3), np.float32)}),
    ("pgdn-heads", {2: np.zeros((5, 3, 3), np.float32), 3: np.zeros((8, 3, 3, 4), np.float32),
                    4: np.zeros((5, 3), np.float32), 5: np.zeros((5, 3), np.float32)}),
    ("pgdn-sequences", {9: np.array([0, 0], I32), 10: np.array([2, 2], I32)}),
    ("pgdn-sequences", {10: np.array([2, 2], I32)}),
    ("pgdn-sequences", {6: np.array([0, 4], I32)}),
    ("pgdn-sequences", {6: np.array([1, 5], I32)}),
    ("pgdn-sequences", {8: np.array([0, 5], I32)}),
    ("pgdn-sequences", {9: np.array([-1], I32)}),
    ("pgdn-block-table", {7: np.zeros(0, I32), 8: np.array([0, 0], I32)}),
    ("pgdn-block-table", {7: np.array([0, 8, 1, 2], I32)}),
    ("index-type", {10: np.array([2], np.float32)}),
    ("same-element-type", {4: np.zeros((5, 4), np.float16)}),
    ("float-type", {0: np.zeros((5, 2, 4), np.int32)}),
]


@pytest.mark.parametrize(("label", "change"), REFUSED)
def test_refusals(label, change):
    arrays = make([(0, 5, 2, [0, 1, 2, 3])])
    arrays = [change.get(i, a) for i, a in enumerate(arrays)]
    with pytest.raises(irscatter.IRError) as caught:
        call(PagedGatedDeltaNet, arrays, {})
    assert caught.value.label == label, str(caught.value)


def test_a_non_positive_eps_is_refused():
    with pytest.raises(irscatter.IRError) as caught:
        call(PagedGatedDeltaNet, make([(0, 5, 2, [0, 1, 2, 3])]), {"k_l2_norm_eps": -1.0})
    assert caught.value.label == "attributes" and "k_l2_norm_eps" in str(caught.value)


@pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="openvino is not installed")
def test_openvino_s_cpu_plugin_agrees(tmp_path):
    """Each case in one IR file, run by OpenVINO with its inputs as tensors over the fed arrays:
    its output and the table it wrote in place must be irscatter's, whose table is donated."""
    jobs, runs = [], []
    for name in CASES:
        arrays, attrs = case(name)
        xml = _ir(tmp_path, arrays, attrs, name=name)
        jobs.append({"kind": "ir", "xml": xml, "feeds": arrays})
        feeds = dict(zip(NAMES, (a.copy() for a in arrays)))
        out = irscatter.read_model(xml).run(feeds, donate=["recurrent_state_table"])["out0"]
        runs.append((out, feeds["recurrent_state_table"]))
    for name, (out, table), theirs in zip(CASES, runs, run_internal_ops_openvino(tmp_path, jobs)):
        np.testing.assert_allclose(out, theirs["out/0"], rtol=1e-4, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(table, theirs["after/3"], rtol=1e-4, atol=1e-5, err_msg=name)
