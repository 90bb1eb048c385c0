"""OpenVINO's internal ops, as its transformations write them into saved models under their own
domains (`version="extension"` for most): PagedAttentionExtension, what OpenVINO GenAI runs for
continuous batching; GatedDeltaNet and PagedGatedDeltaNet, Qwen3-Next's linear attention, whole
and over a paged state table; PaKVReorder, the token moves of speculative decoding in a paged KV
cache; MOE, the routed experts of a Mixture of Experts block; the state-space ops of Mamba2
hybrids (SelectiveSSM, its earlier name SSM, Mamba2) and their paged forms (PagedSelectiveSSM,
PagedCausalConv1D); sparse attention: the block selectors (QSAIndexer, PagedQSAIndexer,
SparseAttentionIndexer) and the attention over what they select (SparseSDPA and its paged twin
SparsePA, BlockSparseAttention). Under `ie_internal_opset`: RMS (RMSNorm as the plugins fuse
it), AUGRUCell and AUGRUSequence (GRU with an attentional update gate), ConvolutionBiased and the
internal Convolution it was renamed to; under `gpu_opset`: GatedResidual, the hyper-connection
residual stream. Shared code: core.py (dimension and begins-table checks), block_selection.py
(the selectors' scoring and ranking), state_space.py (the selective scan and the paged slot
plan).
"""
