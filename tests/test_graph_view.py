"""`CompiledModel.graph`: the read-only view of the analysed graph that tools read
(`runtime/graph_view.py`), on a bundled model: x * c1 + c2, divided by c3, returned as it is
and converted."""

from pathlib import Path

import pytest

import irscatter
from irscatter.runtime.graph_view import GraphView

MODEL = Path(__file__).resolve().parent.parent / "models" / "affine_chain" / "model.xml"


@pytest.fixture(scope="module")
def compiled():
    return irscatter.read_model(MODEL).compile()


def _ids(graph: GraphView) -> dict[str, int]:
    return {graph.layers[lid].name: lid for lid in graph.order}


def test_the_view_lists_what_its_contract_says(compiled):
    graph = compiled.graph
    assert graph is compiled.graph  # built once
    ids = _ids(graph)
    assert isinstance(graph.order, tuple) and len(graph.order) == 10
    assert graph.order.index(ids["Multiply_6"]) < graph.order.index(ids["Add_7"]) < graph.order.index(ids["Divide_10"])
    assert [graph.type_of(lid) for lid in graph.kernels] == ["Multiply", "Add", "Divide", "Convert"]
    assert compiled.get_ordered_ops() == [graph.layers[lid] for lid in graph.order]

    divide, convert = ids["Divide_10"], ids["Convert_11"]
    assert graph.sources[divide] == ((ids["Add_7"], 0), (ids["Constant_9"], 0))
    assert graph.inputs_of(divide) == graph.sources[divide] and graph.producer(divide, 1) == (ids["Constant_9"], 0)
    assert graph.outputs_of(divide) == ((divide, 0),)
    assert graph.readers((divide, 0)) == ((convert, 0), (ids["Result_12"], 0))
    assert graph.producer(compiled.outputs[1].layer.id) == (convert, 0)  # what the model returns
    assert graph.returned(compiled.outputs[1].layer.id) == (convert, 0)
    assert graph.op(divide).label() == "Divide-1"
    assert graph.named("Divide_10") == (divide,) and graph.named("nothing") == ()
    assert graph.of_type("Result") == tuple(spec.layer.id for spec in compiled.outputs)
    assert graph.tensor_key((divide, 0)) == f"Divide_10:{graph.layers[divide].outputs[0].id}"
    assert len(graph.tensors()) == 8 and set(graph.tensors()) == set(graph.infos)
    assert graph.infos[(convert, 0)].etype != graph.infos[(divide, 0)].etype


def test_a_tool_cannot_change_the_compiled_model_through_the_view(compiled):
    graph = compiled.graph
    lid = graph.order[0]
    for mapping, key in [(graph.layers, lid), (graph.sources, lid), (graph.infos, (lid, 0))]:
        with pytest.raises(TypeError):
            mapping[key] = mapping[key]
        with pytest.raises(TypeError):
            del mapping[key]
    with pytest.raises(AttributeError):
        graph.order = ()
    with pytest.raises(AttributeError):  # the old attributes are gone, the plan's slots too
        compiled.layers  # noqa: B018
    assert not hasattr(compiled, "slot_of") and not hasattr(compiled, "infos")
