"""Sorting and searching: top-k, unique values, bucketing, sorted search, non-zero positions,
counts of values (Bincount).
"""

from irscatter.ops.sorting import (  # noqa: F401  (importing a module registers its ops)
    bincount,
    bucketize,
    non_zero,
    search_sorted,
    top_k,
    unique,
)
