"""AUGRUCell (domain `ie_internal_opset`). Two oracles: OpenVINO's CPU plugin, out of process,
which reads the same IR file irscatter reads once the plugin is loaded (internal_openvino.py:
attention scores inside and outside [0, 1], pre-activations that saturate); and the page's
formula transcribed in page_augru.py, for those cases and the rest: f16, bf16 and f64, size-0
batch and input, inf and NaN. With a score of 0 the cell is GRUCell-3. Every label is
triggered."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import one_layer_ir
from internal_checks import BF16, assert_close, run_unwritten
from internal_openvino import AUGRU_CELL_CASES, assert_matches_openvino, augru_weights, needs_openvino
from page_augru import augru_cell as page

import irscatter
from irscatter.errors import IRError
from irscatter.ops.functional import make_op, run_op
from irscatter.ops.internal.augru_cell import AUGRUCell
from irscatter.ops.recurrent.gru_cell import GRUCell

ORDER = ("X", "H", "W", "R", "B", "A")


def augru(arrays, **attrs):
    return run_unwritten(AUGRUCell, arrays, {"hidden_size": arrays[1].shape[-1], **attrs})


def _inputs(batch, inputs, hidden, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    named = {"X": rng.standard_normal((batch, inputs)), "H": rng.standard_normal((batch, hidden)),
             "A": rng.random((batch, 1)), **augru_weights(inputs, hidden, seed + 1)}
    return [np.asarray(named[n]).astype(dtype) for n in ORDER]


@needs_openvino
@pytest.mark.parametrize("case", AUGRU_CELL_CASES, ids=str)
def test_augru_cell_matches_openvinos_cpu_plugin(openvino_results, case):
    assert_matches_openvino(case, openvino_results)
    ours = run_unwritten(AUGRUCell, [i.value for i in case.inputs], case.attrs)
    np.testing.assert_allclose(ours, page(*(i.value for i in case.inputs)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("batch, inputs, hidden, dtype", [
    (3, 2, 4, np.float32), (2, 3, 1, np.float64), (2, 3, 4, np.float16), (2, 3, 4, BF16),
    (0, 3, 4, np.float32), (2, 0, 3, np.float32),
])
def test_augru_cell_matches_the_page(batch, inputs, hidden, dtype):
    arrays = _inputs(batch, inputs, hidden, dtype)
    ours = augru(arrays)
    assert ours.dtype == np.dtype(dtype) and ours.shape == (batch, hidden)
    assert_close(ours, page(*arrays))


def test_inf_and_nan_reach_the_rows_they_touch():
    arrays = _inputs(4, 3, 2)
    arrays[0][0, 1] = np.inf  # saturates the gates of row 0
    arrays[0][1, 0] = np.nan
    arrays[5][2, 0] = np.nan  # the attention of row 2
    arrays[1][3, 0] = -np.inf
    ours = augru(arrays)
    assert_close(ours, page(*arrays))
    assert np.isnan(ours[1]).all() and np.isnan(ours[2]).all()


def test_a_zero_attention_is_gru_cell():
    arrays = _inputs(3, 2, 4)
    arrays[5] = np.zeros_like(arrays[5])
    gru = run_op(make_op(GRUCell, {"hidden_size": 4}), arrays[:5])
    np.testing.assert_array_equal(augru(arrays), gru)


@pytest.mark.parametrize("attrs, label", [
    ({"clip": 1.0}, "augru-attributes"),
    ({"activations": "tanh,sigmoid"}, "augru-attributes"),
    ({"activations": "sigmoid,tanh,tanh"}, "augru-attributes"),
    ({"activations_alpha": "1.0"}, "augru-attributes"),
    ({"linear_before_reset": True}, "augru-attributes"),
    ({"activations": "sigmoid"}, "recurrent-activations"),
    ({"hidden_size": 3}, "recurrent-shape"),
])
def test_augru_cell_refuses_attributes(attrs, label):
    with pytest.raises(IRError) as caught:
        augru(_inputs(2, 3, 4), **attrs)
    assert caught.value.label == label, caught.value


@pytest.mark.parametrize("attention, label", [
    (np.zeros((2, 1, 1), np.float32), "recurrent-rank"),
    (np.zeros((3, 1), np.float32), "recurrent-shape"),
    (np.zeros((2, 2), np.float32), "recurrent-shape"),
    (np.zeros((2, 1), np.float16), "same-element-type"),
])
def test_augru_cell_refuses_an_attention_input(attention, label):
    arrays = _inputs(2, 3, 4)
    with pytest.raises(IRError) as caught:
        augru(arrays[:5] + [attention])
    assert caught.value.label == label, caught.value


def test_an_augru_cell_layer_runs_from_an_ir_file(tmp_path):
    arrays = _inputs(2, 3, 4)
    path = one_layer_ir(tmp_path, "AUGRUCell", "ie_internal_opset", {"hidden_size": "4"}, list(zip(ORDER, arrays)),
                        [((2, 4), np.float32)])
    out = next(iter(irscatter.read_model(path).run(dict(zip(ORDER, arrays))).values()))
    np.testing.assert_allclose(out, page(*arrays), rtol=1e-6, atol=1e-6)
