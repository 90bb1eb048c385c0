"""Matrix products.
"""

from irscatter.ops.matrix import (  # noqa: F401  (importing a module registers its ops)
    einsum,
    inverse,
    mat_mul,
)
