"""OpenVINO's internal ops, as its transformations write them into saved models under their own
domains (`version="extension"`): PagedAttentionExtension, what OpenVINO GenAI runs for
continuous batching; the state-space ops of Mamba2 hybrids (SelectiveSSM, its earlier name
SSM, Mamba2) and their paged forms for continuous batching (PagedSelectiveSSM,
PagedCausalConv1D). `state_space` holds what the state-space ops share.
"""

from irscatter.ops.internal import (  # noqa: F401  (importing a module registers its ops)
    mamba2,
    paged_attention_extension,
    paged_causal_conv1d,
    paged_selective_ssm,
    selective_ssm,
    ssm,
    state_space,
)
