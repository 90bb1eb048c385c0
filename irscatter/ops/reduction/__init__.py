"""Reductions over axes given by an input.
"""

from irscatter.ops.reduction import (  # noqa: F401  (importing a module registers its ops)
    reduce,
)
