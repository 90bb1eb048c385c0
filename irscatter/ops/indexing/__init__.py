"""The gather family, the inverses of the scatters.
"""

from irscatter.ops.indexing import (  # noqa: F401  (importing a module registers its ops)
    gather,
    gather_elements,
    gather_nd,
    one_hot,
)
