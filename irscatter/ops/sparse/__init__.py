"""Embedding bags and segment reductions over sparse index lists, and filling empty rows.

core.py holds the bag arithmetic (gather, weight, sum or mean into bags, fill empty bags) that
the EmbeddingBag* and EmbeddingSegmentsSum ops share.
"""

from irscatter.ops.sparse import (  # noqa: F401  (importing a module registers its ops)
    embedding_bag_offsets,
    embedding_bag_offsets_sum,
    embedding_bag_packed,
    embedding_bag_packed_sum,
    embedding_segments_sum,
    segment_max,
    sparse_fill_empty_rows,
)
