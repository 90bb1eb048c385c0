"""EmbeddingBagPacked-15: EmbeddingBagPackedSum-3 (see `embedding_bag_packed_sum.py`) with a
`reduction` attribute: `sum` as in -3, or `mean`, ReduceMean(Gather(emb_table, indices), axis=1).

In mean mode per_sample_weights are refused (`mean-weights`), as the spec and OpenVINO's
validation say. An integer mean truncates toward zero, as the reference's C++ division does.
With indices_per_bag = 0 every bag is empty: the spec's ReduceMean over an empty axis gives
NaN for floats, as OpenVINO's reference computes it (0 / 0); integers give 0, where the
reference divides by zero. OpenVINO's CPU plugin refuses such indices.
"""

from __future__ import annotations

from typing import Annotated, Literal

from irscatter.ops.base import Lower, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register
from irscatter.ops.sparse.embedding_bag_packed_sum import PackedBase


@register("EmbeddingBagPacked", 15)
class EmbeddingBagPacked(PackedBase):
    class Attrs(OpAttrs):
        reduction: Annotated[Literal["sum", "mean"], Lower] = "sum"
    attrs: Attrs

    @property
    def mean(self) -> bool:  # type: ignore[override]
        return self.attrs.reduction == "mean"

    def infer(self, emb_table: TensorInfo, indices: TensorInfo,
              per_sample_weights: TensorInfo | None = None) -> TensorInfo:
        check(per_sample_weights is None or not self.mean, "mean-weights",
              "per_sample_weights can only be given with reduction sum", port=self.port("per_sample_weights"))
        return super().infer(emb_table, indices, per_sample_weights)
