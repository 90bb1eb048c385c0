"""OpenVINO's internal ops, as its transformations write them into saved models under their own
domains (`version="extension"`): PagedAttentionExtension, what OpenVINO GenAI runs for
continuous batching.
"""

from irscatter.ops.internal import (  # noqa: F401  (importing a module registers its ops)
    paged_attention_extension,
)
