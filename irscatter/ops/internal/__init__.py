"""OpenVINO's internal ops, as its transformations write them into saved models under their own
domains (`version="extension"` for most): PagedAttentionExtension, what OpenVINO GenAI runs for
continuous batching; GatedDeltaNet and PagedGatedDeltaNet, Qwen3-Next's linear attention, whole
and over a paged state table; PaKVReorder, the token moves of speculative decoding in a paged KV
cache; MOE, the routed experts of a Mixture of Experts block; sparse attention: the block
selectors (QSAIndexer, PagedQSAIndexer, SparseAttentionIndexer) and the attention over what
they select (SparseSDPA and its paged twin SparsePA, BlockSparseAttention). core.py holds the
dimension and begins-table checks they share, block_selection.py the selectors' scoring and
ranking.
"""

from irscatter.ops.internal import (  # noqa: F401  (importing a module registers its ops)
    block_selection,
    block_sparse_attention,
    gated_delta_net,
    moe,
    pa_kv_reorder,
    paged_attention_extension,
    paged_gated_delta_net,
    paged_qsa_indexer,
    qsa_indexer,
    sparse_attention_indexer,
    sparse_pa,
    sparse_sdpa,
)
