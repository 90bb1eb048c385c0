"""The oracles: slow, obviously-correct reference code, one module per op family (mirroring
`irscatter/ops/`), written to read like the spec rather than to run fast.

An oracle takes and returns numpy arrays and computes one output element (or one update) per
Python step, in the order the spec's definition gives, with the spec's names. It is the truth the
vectorized kernels are checked against (`harness.Case(oracle=...)` and the kernel tests), so it
is kept as literal as the spec allows: no vectorization, no shared cleverness with the kernel it
checks. Never use an oracle on anything big.

* `oracles.scatter`: ScatterUpdate-3, ScatterElementsUpdate-3/-12, ScatterNDUpdate-4/-15;
* `oracles.irscatter1`: PagedScatterUpdate, PaddleScatter, BNNSScatter, HloScatter;
* `oracles.internal`: PagedAttentionExtension (`oracles.internal.paged_attention`).

The names below are re-exported so that `oracles.scatter_nd(...)` reads as the op it checks.
"""

from oracles.irscatter1 import bnns_scatter, hlo_scatter, paddle_scatter, paged_scatter_update
from oracles.scatter import scatter_elements, scatter_nd, scatter_update

__all__ = ["bnns_scatter", "hlo_scatter", "paddle_scatter", "paged_scatter_update", "scatter_elements",
           "scatter_nd", "scatter_update"]
