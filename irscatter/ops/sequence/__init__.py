"""Sequence decoding: beam-search back-tracking, CTC greedy decoding and the CTC loss.
"""

from irscatter.ops.sequence import (  # noqa: F401  (importing a module registers its ops)
    ctc_greedy_decoder,
    ctc_greedy_decoder_seq_len,
    ctc_loss,
    gather_tree,
)
