"""EmbeddingBagOffsets-15: EmbeddingBagOffsetsSum-3 (see `embedding_bag_offsets_sum.py`) with a
`reduction` attribute: `sum` as in -3, or `mean`, the sum of a bag divided by its size.

In mean mode an empty bag is still emb_table[default_index] or zeros (not divided), and
per_sample_weights are refused (`mean-weights`), as the spec and OpenVINO's validation say.
An integer mean truncates toward zero, as the reference's C++ division does.
"""

from __future__ import annotations

from typing import Annotated, Literal

from irscatter.ops.base import Lower, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register
from irscatter.ops.sparse.embedding_bag_offsets_sum import OffsetsBase


@register("EmbeddingBagOffsets", 15)
class EmbeddingBagOffsets(OffsetsBase):
    class Attrs(OpAttrs):
        reduction: Annotated[Literal["sum", "mean"], Lower] = "sum"
    attrs: Attrs

    @property
    def mean(self) -> bool:  # type: ignore[override]
        return self.attrs.reduction == "mean"

    def infer(self, emb_table: TensorInfo, indices: TensorInfo, offsets: TensorInfo,
              default_index: TensorInfo | None = None, per_sample_weights: TensorInfo | None = None) -> TensorInfo:
        check(per_sample_weights is None or not self.mean, "mean-weights",
              "per_sample_weights can only be given with reduction sum", port=self.port("per_sample_weights"))
        return super().infer(emb_table, indices, offsets, default_index, per_sample_weights)
