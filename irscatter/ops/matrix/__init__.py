"""Matrix products.
"""

from irscatter.ops.matrix import (  # noqa: F401  (importing a module registers its ops)
    mat_mul,
)
