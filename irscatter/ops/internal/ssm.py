"""SSM (domain `extension`): the selective state-space recurrence of Mamba2 mixers with the
discretization done inside the op, as its page (internal/ssm.rst) describes it.

The page gives SSM the inputs, outputs, types and arithmetic of SelectiveSSM: its pseudocode
discretizes step by step (dA_t = exp(A * dt_t), dt_t * B_t) where SelectiveSSM's does it for
the whole sequence first, which computes the same numbers. So SSM is SelectiveSSM under
another name, and shares its inference and kernel.

Domain: OpenVINO 2026.4.1 has no op of this type, and no OpenVINO source found declares one.
Every state-space op OpenVINO does declare (SelectiveSSM, PagedSelectiveSSM, Mamba2,
PagedCausalConv1D) uses a one-argument OPENVINO_OP in ov::op::internal, which writes
`version="extension"` in saved IR; SSM is registered under the same domain.
"""

from __future__ import annotations

from irscatter.ops.internal.selective_ssm import DOMAIN, SelectiveSSM
from irscatter.ops.registry import register


@register("SSM", 1, domain=DOMAIN)
class SSM(SelectiveSSM):
    """Mamba2's selective scan (the page's earlier name for SelectiveSSM)."""
