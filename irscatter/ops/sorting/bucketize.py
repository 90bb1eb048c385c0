"""Bucketize-3: for each element of `data`, the index of the bucket it falls in, buckets being
cut by the sorted 1-D `buckets` boundaries: with `with_right_bound` (the default) bucket i is
(b[i-1], b[i]], the number of boundaries below the value; without it [b[i-1], b[i]), the number
at or below it. Empty boundaries put everything in bucket 0. The output, of `output_type` (i64
or i32), has data's shape.

Data and boundaries may be of any numeric types, not necessarily the same one: they are
compared by value (see `sorting.core.count_below_mixed`; OpenVINO compares with C++'s
conversions, which round an integer to a float boundary's type first).

NaN, which the spec does not mention, goes where OpenVINO's reference (std::lower_bound and
std::upper_bound) puts it: bucket 0 with the right bound (no boundary compares below it), the
last bucket without it. Unsorted boundaries are undefined (the spec requires them sorted).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.registry import register
from irscatter.ops.sorting.core import IndexType, count_below_mixed, numeric


class BucketizeAttrs(OpAttrs):
    output_type: IndexType = "i64"
    with_right_bound: IRBool = True


@register("Bucketize", 3)
class Bucketize(Op):
    labels = {"bucketize-buckets-rank": "the boundaries of a Bucketize are not a 1-D tensor"}

    Attrs = BucketizeAttrs
    attrs: BucketizeAttrs
    inputs = ("data", "buckets")

    def infer(self, data: TensorInfo, buckets: TensorInfo) -> TensorInfo:
        for name, info in (("data", data), ("buckets", buckets)):
            check(numeric(info.etype), "numeric-type", f"Bucketize takes numeric {name}, found {info.etype}",
                  port=self.port(name))
        check(not buckets.shape.rank_is_static or buckets.shape.rank == 1, "bucketize-buckets-rank",
              f"the boundaries must be a 1-D tensor, found shape {buckets.shape}", port=self.port("buckets"))
        return TensorInfo(ElementType[self.attrs.output_type], data.shape)

    def compute(self, data: np.ndarray, buckets: np.ndarray) -> np.ndarray:
        right = self.attrs.with_right_bound
        # with the right bound a value's bucket counts the boundaries strictly below it
        found = np.asarray(count_below_mixed(buckets, data, right=not right))
        if right and data.dtype.kind not in "iub":
            found = np.where(np.isnan(data.astype(np.float32, copy=False)), 0, found)
        return found.reshape(data.shape).astype(ElementType[self.attrs.output_type].dtype)
