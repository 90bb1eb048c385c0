"""A model with dynamic inputs infers again on each new combination of fed shapes
(`runtime/binding.py`'s ShapeChecks), so that a shape error names its layer before any kernel
runs; a layer whose inputs say what they said in the last pass is not inferred again
(`checks/infer.py`), so a decoder's step re-infers only what its longer mask reaches."""

from collections import Counter

import numpy as np
import pytest
from test_folding import _Builder

import irscatter
from irscatter.checks import infer
from irscatter.errors import IRError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import TensorInfo


def _two_branches(tmp_path):
    """x[?, 4] -> Relu -> Relu, y[?] -> Relu -> Add(y, y): two independent dynamic branches."""
    b = _Builder()
    x = b.add("Parameter", {"shape": "?,4", "element_type": "f32"}, [], (-1, 4), "f32")
    y = b.add("Parameter", {"shape": "?", "element_type": "f32"}, [], (-1,), "f32")
    left = b.add("Relu", None, [b.add("Relu", None, [x], (-1, 4), "f32")], (-1, 4), "f32")
    right = b.add("Relu", None, [y], (-1,), "f32")
    total = b.add("Add", {"auto_broadcast": "numpy"}, [right, y], (-1,), "f32")
    b.add("Result", None, [left], (), "f32")
    b.add("Result", None, [total], (), "f32")
    return b.save(tmp_path)


@pytest.fixture
def inferred(monkeypatch):
    """The layers (by type) inferred in the passes that follow."""
    counts: Counter = Counter()
    real = infer.InferenceMemo.infer

    def counting(self, op, layer, args):
        counts[layer.type] += 1
        return real(self, op, layer, args)

    monkeypatch.setattr(infer.InferenceMemo, "infer", counting)
    return counts


def test_only_the_layers_a_changed_shape_reaches_are_inferred_again(tmp_path, inferred):
    compiled = irscatter.compile_model(_two_branches(tmp_path))
    x, y = np.ones((2, 4), np.float32), np.arange(3, dtype=np.float32)
    compiled({"l0": x, "l1": y})
    inferred.clear()
    out = compiled({"l0": x, "l1": np.arange(5, dtype=np.float32)})
    assert inferred == Counter({"Relu": 1, "Add": 1, "Result": 1})  # y's branch; not x's two Relus
    assert out[1].tolist() == [0, 2, 4, 6, 8]
    inferred.clear()
    compiled({"l0": np.ones((7, 4), np.float32), "l1": np.arange(5, dtype=np.float32)})
    assert inferred == Counter({"Relu": 2, "Result": 1})


def test_the_first_run_infers_only_what_the_fed_shapes_reach(tmp_path, inferred):
    """The first check starts from compiling's pass: the Consts and what Consts alone feed (a
    weight that is too large to fold, decompressed) keep the outputs compiling gave them."""
    b = _Builder()
    x = b.add("Parameter", {"shape": "?,64", "element_type": "f32"}, [], (-1, 64), "f32")
    weight = b.add("Convert", {"destination_type": "f32"}, [b.const(np.ones((64, 64), np.float16), "f16")],
                   (64, 64), "f32")
    b.add("Result", None, [b.add("MatMul", None, [x, weight], (-1, 64), "f32")], (), "f32")
    compiled = irscatter.compile_model(b.save(tmp_path))
    inferred.clear()
    out = compiled({"l0": np.ones((3, 64), np.float32)})
    assert inferred == Counter({"MatMul": 1, "Result": 1})
    assert out[0].shape == (3, 64) and out[0][0, 0] == 64


def test_a_shape_error_still_names_its_layer_before_any_kernel_runs(tmp_path):
    b = _Builder()
    x = b.add("Parameter", {"shape": "?", "element_type": "f32"}, [], (-1,), "f32")
    y = b.add("Parameter", {"shape": "?", "element_type": "f32"}, [], (-1,), "f32")
    b.add("Result", None, [b.add("Add", {"auto_broadcast": "none"}, [x, y], (-1,), "f32")], (), "f32")
    compiled = irscatter.compile_model(b.save(tmp_path))
    assert compiled({"l0": np.ones(3, np.float32), "l1": np.ones(3, np.float32)})[0].tolist() == [2, 2, 2]
    with pytest.raises(IRError, match="l2"):
        compiled({"l0": np.ones(3, np.float32), "l1": np.ones(4, np.float32)})
    assert compiled({"l0": np.ones(4, np.float32), "l1": np.ones(4, np.float32)})[0].tolist() == [2] * 4


def test_a_pass_that_failed_leaves_nothing_half_updated(tmp_path):
    """The shape check alone (the kernel would fail as well): the same bad shapes fail again."""
    b = _Builder()
    x = b.add("Parameter", {"shape": "?", "element_type": "f32"}, [], (-1,), "f32")
    y = b.add("Parameter", {"shape": "?", "element_type": "f32"}, [], (-1,), "f32")
    b.add("Result", None, [b.add("Add", {"auto_broadcast": "none"}, [x, y], (-1,), "f32")], (), "f32")
    graph = irscatter.compile_model(b.save(tmp_path)).graph
    previous: dict = {}

    def fed(*lengths):
        return {lid: TensorInfo(ElementType.f32, PartialShape.of((n,))) for lid, n in zip((0, 1), lengths)}

    graph.recheck(fed(3, 3), previous)  # a whole pass
    graph.recheck(fed(4, 4), previous)  # the changed layers only
    for _ in range(2):
        with pytest.raises(IRError, match="l2"):
            graph.recheck(fed(4, 5), previous)
    graph.recheck(fed(5, 5), previous)
    assert previous[2][1][0].shape.dims == PartialShape.of((5,)).dims
