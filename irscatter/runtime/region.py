"""Regions: a layer's `<body>` sub-graph used as a function of scalars.

StableHLO-style ops take a combiner written as a small graph with scalar Parameters and
scalar Results. Calling it once per element would be a Python loop per element, so a
region is compiled twice: once as written, which gives its signature (the element types of
its Parameters and Results, checked by the owning op), and once with every Parameter made
1-D and dynamic, which evaluates the combiner on whole vectors of arguments in one run.
The two agree because a region may only contain element-wise ops (each output element
depends only on the same-position input elements) and must produce scalars.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import IRError, ValidationError
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Body, Layer
from irscatter.ops.common import strict
from irscatter.runtime.interpreter import CompiledModel
from irscatter.runtime.subgraph import inside


def _vectorized(layer: Layer) -> Layer:
    if layer.type != "Parameter":
        return layer
    return layer.copy_with(attrs={**layer.attrs, "shape": "?"})


class Region:
    """A compiled `<body>`: `region(*vectors)` returns one vector per Result."""

    def __init__(self, body: Body) -> None:
        try:
            written = CompiledModel(body.as_model())
            graph = written.graph
            foreign = [graph.layers[lid] for lid in graph.order if not graph.op(lid).elementwise]
            if foreign:
                first = foreign[0]
                raise ValidationError(
                    f"a region may only hold element-wise ops (arithmetic, comparisons, logic, Select, Convert, "
                    f"Const), found {first.type}", layer=first.ref, label="region-ops")
            for spec in written.outputs:
                if spec.shape.rank_is_static and spec.shape.rank != 0:
                    raise ValidationError(f"a region's Results must be scalars, found {spec.shape}",
                                          layer=spec.layer.ref, label="region-scalars")
            self._vector = CompiledModel(body.as_model([_vectorized(x) for x in body.graph.layers]))
        except IRError as e:
            raise inside(e) from None
        self.param_types: list[ElementType] = [spec.etype for spec in written.inputs]
        self.param_ranks: list[int | None] = [spec.shape.rank if spec.shape.rank_is_static else None
                                              for spec in written.inputs]
        self.result_types: list[ElementType] = [spec.etype for spec in written.outputs]

    def __call__(self, *vectors: np.ndarray) -> list[np.ndarray]:
        n = len(vectors[0]) if vectors else 0
        try:
            with strict.inside("body"):  # the combiner's own layers run here, under the owner's
                outs = self._vector.run_positional(list(vectors))
        except IRError as e:
            raise inside(e) from None
        return [np.broadcast_to(o, (n,)) if o.ndim == 0 else o.reshape(n) for o in outs]
