"""Broadcast refuses a negative target dimension, whether the target is a folded constant (at
inference, for every mode) or arrives at run time."""

import harness
import numpy as np
import pytest
from harness import Case, Input

CASES = [
    Case(f"{mode}-{'const' if const else 'fed'}", "Broadcast", "opset3",
         [Input("data", np.float32(1.5), const=True),
          Input("target_shape", np.array([1, -1], np.int64), const=const)],
         attrs={"mode": mode}, openvino="none", why="OpenVINO refuses the model", error="broadcast-shape")
    for mode in ("numpy", "bidirectional") for const in (True, False)
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_negative_target_dimension_is_refused(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("version", ["opset1", "opset3"])
def test_axes_mapping_of_a_float_type_is_refused(version):
    """The spec's axes_mapping is an integer tensor; a float one (+inf here) used to reach int()."""
    from irscatter.errors import ValidationError
    from irscatter.ops import registry
    from irscatter.ops.functional import call

    cls = registry.resolve("Broadcast", version).cls
    with pytest.raises(ValidationError) as info:
        call(cls, [np.zeros((1, 3), np.float32), np.array([2, 1, 3], np.int32),
                   np.array([np.inf, 1], np.float32)], {"mode": "explicit"})
    assert info.value.label == "axes_mapping-type"
