"""Sequence decoding: beam-search back-tracking.
"""

from irscatter.ops.sequence import (  # noqa: F401  (importing a module registers its ops)
    gather_tree,
)
