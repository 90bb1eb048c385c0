"""TensorIterator-1: a body run once per part of its sliced inputs.

The number of iterations is the number of parts the sliced inputs are cut into (OpenVINO's
rule: |end - start| + 1 indices of the axis, in parts of part_size; start and end count from
the end when negative, stride's sign gives the direction). The port map, back edges and the
outputs are described in `ops/control/core.py`.
"""

from __future__ import annotations

import numpy as np

from irscatter.ops.base import TensorInfo
from irscatter.ops.control.core import Iterating
from irscatter.ops.registry import register


@register("TensorIterator", 1)
class TensorIterator(Iterating):
    inputs = ("inputs",)

    def infer(self, *inputs: TensorInfo) -> tuple[TensorInfo, ...]:
        results = self.infer_body(inputs, {})
        return self.output_infos(results, self.sliced_count(inputs), inputs)

    def compute(self, *arrays: np.ndarray):
        return self.iterate(arrays, None, {})
