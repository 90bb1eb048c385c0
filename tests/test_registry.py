"""Opset resolution as OpenVINO's opset tables do it, duplicate registration, and the
labelled errors an IR file produces end to end."""

import numpy as np
import pytest

import irscatter
from irscatter.ops import registry
from irscatter.ops.base import Op
from helpers import layer, net, param, port, result, write


@pytest.mark.parametrize(
    "type_name, opset, version",
    [
        ("ScatterElementsUpdate", "opset3", 3), ("ScatterElementsUpdate", "opset11", 3),
        ("ScatterElementsUpdate", "opset12", 12), ("ScatterElementsUpdate", "opset16", 12),
        ("ScatterNDUpdate", "opset4", 3), ("ScatterNDUpdate", "opset14", 3), ("ScatterNDUpdate", "opset15", 15),
        ("Gather", "opset1", 1), ("Gather", "opset6", 1), ("Gather", "opset7", 7), ("Gather", "opset15", 8),
        ("GatherND", "opset5", 5), ("GatherND", "opset8", 8), ("gathernd", "OPSET8", 8),
        ("ScatterNdUpdate", "opset15", 15), ("SliceScatter", "opset15", 15), ("Slice", "opset8", 8),
        ("ShapeOf", "opset1", 1), ("ShapeOf", "opset3", 3), ("Broadcast", "opset2", 1), ("Broadcast", "opset3", 3),
    ],
)
def test_newest_version_not_newer_than_the_opset(type_name, opset, version):
    assert registry.find(type_name, opset).version == version


@pytest.mark.parametrize("type_name, opset", [("ScatterUpdate", "opset2"), ("SliceScatter", "opset14"),
                                              ("Slice", "opset7"), ("GatherElements", "opset5"), ("Add", "opsetX"),
                                              ("Add", "irscatter1")])
def test_types_newer_than_the_opset_do_not_resolve(type_name, opset):
    assert registry.find(type_name, opset) is None


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
