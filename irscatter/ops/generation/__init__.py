"""Ops that make tensors from scalars and shapes.
"""

from irscatter.ops.generation import (  # noqa: F401  (importing a module registers its ops)
    range,
)
