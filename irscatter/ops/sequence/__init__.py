"""Sequence processing: beam-search back-tracking, CTC greedy decoding and the CTC loss, and the
block-sparse attentions of opset17's drafts (BlockSparseAttention-17, QwenSparseAttention-17).
"""
