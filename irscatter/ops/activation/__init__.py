"""Activation functions: the element-wise ones as rows of a table (elementwise.py), the rest one
module per op type."""

from irscatter.ops.activation import (  # noqa: F401  (importing a module registers its ops)
    elementwise,
    hard_sigmoid,
    log_softmax,
    p_relu,
    selu,
    softmax,
    swish,
)
