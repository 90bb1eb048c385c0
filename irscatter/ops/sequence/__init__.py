"""Sequence processing: beam-search back-tracking, CTC greedy decoding and the CTC loss, and the
block-sparse attentions of opset17's drafts (BlockSparseAttention-17, QwenSparseAttention-17).
"""

from irscatter.ops.sequence import (  # noqa: F401  (importing a module registers its ops)
    block_sparse_attention,
    ctc_greedy_decoder,
    ctc_greedy_decoder_seq_len,
    ctc_loss,
    gather_tree,
    qwen_sparse_attention,
)
