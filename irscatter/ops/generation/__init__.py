"""Ops that make tensors from scalars and shapes: sequences (Range), identity-like matrices
(Eye) and pseudo-random values (RandomUniform, Multinomial, RandomPoisson; their generators are in
core.py).
"""

from irscatter.ops.generation import (  # noqa: F401  (importing a module registers its ops)
    eye,
    multinomial,
    random_poisson,
    random_uniform,
    range,
)
