"""Matrix products.
"""

from irscatter.ops.matrix import (  # noqa: F401  (importing a module registers its ops)
    einsum,
    grouped_mat_mul,
    inverse,
    mat_mul,
    scaled_dot_product_attention,
)
