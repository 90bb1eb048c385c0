"""OpenVINO's internal ops, as its transformations write them into saved models under their own
domains (`version="extension"`): PagedAttentionExtension, what OpenVINO GenAI runs for
continuous batching, and the sparse attention ops whose pages describe them as internal:
SparseSDPA and its paged twin SparsePA (attention over an upstream selector's key blocks), and
BlockSparseAttention (Qwen and DeepSeek sparse attention's attention stage).
"""

from irscatter.ops.internal import (  # noqa: F401  (importing a module registers its ops)
    block_sparse_attention,
    paged_attention_extension,
    sparse_pa,
    sparse_sdpa,
)
