"""OpenVINO's internal ops, as its transformations write them into saved models under their own
domains (`version="extension"`): PagedAttentionExtension, what OpenVINO GenAI runs for
continuous batching, and the block selectors of sparse attention (QSAIndexer, PagedQSAIndexer,
SparseAttentionIndexer; their shared arithmetic in block_selection.py).
"""

from irscatter.ops.internal import (  # noqa: F401  (importing a module registers its ops)
    block_selection,
    paged_attention_extension,
    paged_qsa_indexer,
    qsa_indexer,
    sparse_attention_indexer,
)
