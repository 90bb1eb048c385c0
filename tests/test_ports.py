"""Messages name ports from each op's declaration, so an op whose axis is its third input says
`input 2`, and no module of the op library retypes a port name."""

import re
from pathlib import Path

import numpy as np
import pytest
from helpers import layer, net, param, port, result, write

import irscatter
from irscatter.ops.indexing.gather import Gather8
from irscatter.ops.movement.concat import Concat
from irscatter.ops.scatter.scatter_elements_update import ScatterElementsUpdate12


def test_port_names_come_from_the_declared_inputs():
    assert Gather8.port("axis") == "input 2"
    assert ScatterElementsUpdate12.port("axis") == "input 3"
    assert Concat.port("axis") == "attribute axis"
    with pytest.raises(KeyError, match="declares no input or attribute 'nothing'"):
        Gather8.port("nothing")


def test_a_gather8_runtime_axis_out_of_range_names_input_2(tmp_path):
    layers = [param(0, "data", [2, 3]), param(1, "idx", [2], et="i64", precision="I64"),
              param(2, "axis", [], et="i64", precision="I64"),
              layer(3, "g", "Gather", "opset8", data={"batch_dims": "0"},
                    inputs=[port(0, "FP32", [2, 3]), port(1, "I64", [2]), port(2, "I64", [])],
                    outputs=[port(3, "FP32", [2, 2])]),
              result(4, "r", [2, 2])]
    model = irscatter.read_model(write(tmp_path, net(layers, [(0, 0, 3, 0), (1, 0, 3, 1), (2, 0, 3, 2), (3, 3, 4, 0)])))
    with pytest.raises(irscatter.ExecutionError) as info:
        model.run({"data": np.zeros((2, 3), np.float32), "idx": np.array([0, 1]), "axis": np.array(5)})
    assert info.value.port == "input 2" and "axis 5 is out of the range [-2, 1]" in info.value.message


def test_no_op_module_writes_a_port_name_by_hand():
    ops = Path(irscatter.__file__).parent / "ops"
    found = [f"{p.name}:{n}" for p in ops.glob("*.py") if p.name != "base.py"
             for n, line in enumerate(p.read_text().splitlines(), 1) if re.search(r'"input \d+"', line)]
    assert found == []
