"""Element-wise ops: each output element depends only on the elements at the same position of
the (broadcast) inputs.
"""

from irscatter.ops.elementwise import (  # noqa: F401  (importing a module registers its ops)
    binary,
    select,
    unary,
)
