"""Reductions over axes given by an input, and running sums along one axis.
"""

from irscatter.ops.reduction import (  # noqa: F401  (importing a module registers its ops)
    cum_sum,
    reduce,
)
