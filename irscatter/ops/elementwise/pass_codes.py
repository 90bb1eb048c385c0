"""The activations the compiled passes of `bias_kernels.py` apply, each by the number its loops
branch on, and the ops (type, version) they stand for. Kept apart from those loops, which
import numba, so that `runtime/epilogues.py` can read them when it compiles a model."""

from __future__ import annotations

NONE, RELU, HSWISH, HSIGMOID, SWISH = 0, 1, 2, 3, 4
ACTIVATIONS = {("Relu", 1): RELU, ("HSwish", 4): HSWISH, ("HSigmoid", 5): HSIGMOID, ("Swish", 4): SWISH}
