"""irscatter's own opset `irscatter1`: the scatter systems of other frameworks (StableHLO,
Apple BNNS, Paddle, PyPTO's paged KV cache), as ops of a custom domain and as plain functions.
"""

from irscatter.ops.irscatter1 import (  # noqa: F401  (importing a module registers its ops)
    bnns_scatter,
    hlo_scatter,
    paddle_scatter,
    paged_scatter_update,
)
