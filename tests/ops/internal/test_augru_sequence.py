"""AUGRUSequence (domain `ie_internal_opset`). Two oracles: OpenVINO's CPU plugin, out of
process, which reads the same IR file irscatter reads once the plugin is loaded, but runs the op
only when every sequence has the full length (internal_openvino.py); and the page's formula
transcribed in page_augru.py, for those cases and the rest: lengths from 0 to seq_length, i32,
i64 and u8 lengths, f16, bf16 and f64, size-0 batch, sequence and input, inf and NaN. Each step
is also held to AUGRUCell's. Every label is triggered."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import one_layer_ir
from internal_checks import BF16, assert_close, run_unwritten
from internal_openvino import AUGRU_SEQUENCE_CASES, assert_matches_openvino, augru_weights, needs_openvino
from page_augru import augru_sequence as page

import irscatter
from irscatter.errors import IRError
from irscatter.ops.functional import make_op, run_op
from irscatter.ops.internal.augru_cell import AUGRUCell
from irscatter.ops.internal.augru_sequence import AUGRUSequence

ORDER = ("X", "H", "lengths", "W", "R", "B", "A")


def augru(arrays, **attrs):
    return run_unwritten(AUGRUSequence, arrays, {"hidden_size": arrays[1].shape[-1], **attrs})


def _inputs(batch, seq, inputs, hidden, lengths=None, dtype=np.float32, length_type=np.int32, seed=0):
    rng = np.random.default_rng(seed)
    weights = augru_weights(inputs, hidden, seed + 1)
    named = {"X": rng.standard_normal((batch, seq, inputs)), "H": rng.standard_normal((batch, 1, hidden)),
             "A": rng.random((batch, seq, 1)), "W": weights["W"][None], "R": weights["R"][None],
             "B": weights["B"][None]}
    arrays = {n: np.asarray(v).astype(dtype) for n, v in named.items()}
    arrays["lengths"] = np.asarray([seq] * batch if lengths is None else lengths, length_type)
    return [arrays[n] for n in ORDER]


def _close(ours, expected, dtype):
    for got, wanted in zip(ours, expected):
        assert got.dtype == np.dtype(dtype) and got.shape == wanted.shape
        assert_close(got, wanted)


@pytest.mark.parametrize("batch, seq, inputs, hidden, lengths, dtype, length_type", [
    (3, 4, 2, 3, [4, 2, 0], np.float32, np.int32),
    (2, 3, 3, 2, None, np.float64, np.int64),
    (2, 3, 2, 2, [3, 1], np.float16, np.uint8),
    (2, 3, 2, 2, [2, 3], BF16, np.int64),
    (0, 3, 2, 2, [], np.float32, np.int32),
    (2, 0, 2, 2, [0, 0], np.float32, np.int32),
    (2, 3, 0, 2, [3, 3], np.float32, np.int32),
])
def test_augru_sequence_matches_the_page(batch, seq, inputs, hidden, lengths, dtype, length_type):
    arrays = _inputs(batch, seq, inputs, hidden, lengths, dtype, length_type)
    _close(augru(arrays), page(*arrays), dtype)


def test_inf_and_nan_stay_in_their_rows_and_steps():
    arrays = _inputs(3, 4, 2, 2, [4, 4, 2])
    arrays[0][0, 1, 0] = np.nan  # from step 1 on, row 0 is NaN
    arrays[6][1, 2, 0] = np.inf  # (1 - inf) z: row 1 from step 2 on
    arrays[0][2, 3, 1] = np.nan  # past row 2's length: read by nothing
    ours = augru(arrays)
    _close(ours, page(*arrays), np.float32)
    assert np.isfinite(ours[0][2]).all() and np.isfinite(ours[0][0, 0, 0]).all()


def test_each_step_is_augru_cell():
    x, h, lengths, w, r, b, a = _inputs(2, 3, 2, 4)
    y, last = augru([x, h, lengths, w, r, b, a])
    state = h[:, 0]
    cell = make_op(AUGRUCell, {"hidden_size": 4})
    for t in range(3):
        state = run_op(cell, [x[:, t], state, w[0], r[0], b[0], a[:, t]])
        np.testing.assert_allclose(y[:, 0, t], state, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(last[:, 0], state, rtol=1e-6, atol=1e-7)


@needs_openvino
@pytest.mark.parametrize("case", AUGRU_SEQUENCE_CASES, ids=str)
def test_a_full_length_sequence_matches_openvinos_cpu_plugin(openvino_results, case):
    """The plugin runs AUGRUSequence only when every row is seq_length long (constant lengths)."""
    assert_matches_openvino(case, openvino_results)
    arrays = [i.value for i in case.inputs]
    _close(run_unwritten(AUGRUSequence, arrays, case.attrs), page(*arrays), np.float32)


@pytest.mark.parametrize("attrs, label", [
    ({"direction": "reverse"}, "augru-attributes"),
    ({"direction": "bidirectional"}, "augru-attributes"),
    ({"clip": 2.0}, "augru-attributes"),
    ({"activations_beta": "1.0"}, "augru-attributes"),
])
def test_augru_sequence_refuses_attributes(attrs, label):
    with pytest.raises(IRError) as caught:
        augru(_inputs(2, 3, 2, 4), **attrs)
    assert caught.value.label == label, caught.value


@pytest.mark.parametrize("position, value, label", [
    (6, np.zeros((2, 3), np.float32), "recurrent-rank"),
    (6, np.zeros((2, 4, 1), np.float32), "recurrent-shape"),
    (6, np.zeros((3, 3, 1), np.float32), "recurrent-shape"),
    (6, np.zeros((2, 3, 2), np.float32), "recurrent-shape"),
    (6, np.zeros((2, 3, 1), np.float64), "same-element-type"),
    (2, np.array([3.0, 1.0], np.float32), "sequence-lengths-type"),
    (2, np.array([4, 1], np.int32), "sequence-lengths-range"),
    (2, np.array([-1, 1], np.int32), "sequence-lengths-range"),
])
def test_augru_sequence_refuses_inputs(position, value, label):
    arrays = _inputs(2, 3, 2, 4)
    arrays[position] = value
    with pytest.raises(IRError) as caught:
        augru(arrays)
    assert caught.value.label == label, caught.value


def test_an_augru_sequence_layer_runs_from_an_ir_file(tmp_path):
    arrays = _inputs(2, 3, 2, 4, [3, 2])
    path = one_layer_ir(tmp_path, "AUGRUSequence", "ie_internal_opset", {"hidden_size": "4"},
                        list(zip(ORDER, arrays)), [((2, 1, 3, 4), np.float32), ((2, 1, 4), np.float32)])
    out = list(irscatter.read_model(path).run(dict(zip(ORDER, arrays))).values())
    _close(out, page(*arrays), np.float32)
