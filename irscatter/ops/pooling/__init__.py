"""Pooling: max and average windows, and the adaptive forms.
"""

from irscatter.ops.pooling import (  # noqa: F401  (importing a module registers its ops)
    adaptive_avg_pool,
    adaptive_max_pool,
    avg_pool,
    max_pool,
)
