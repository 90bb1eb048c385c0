"""SearchSorted-15: for each value, the index in the innermost dimension of `sorted_sequence`
at which it would be inserted to keep that row ascending: the leftmost such index (the number
of entries below the value), or with `right_mode` the rightmost (the number at or below it).
The output is i64, of the values' shape.

A 1-D sorted sequence serves values of any shape; otherwise the values have the sequence's rank
and its dimensions but the last, and each row of values is searched in its own row of the
sequence. Both inputs share one float or integer type T.

A NaN value gives 0 in both modes, as OpenVINO's reference (std::lower_bound with < or <=, which
no entry satisfies against NaN) and its CPU plugin give; the spec does not say. -0.0 and 0.0
are equal. Unsorted rows (or rows holding NaN) are undefined: the spec requires them ascending.
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register
from irscatter.ops.sorting.core import count_below, numeric


class SearchSortedAttrs(OpAttrs):
    right_mode: IRBool = False


@register("SearchSorted", 15)
class SearchSorted(Op):
    labels = {
        "search-sorted-rank": "the sorted sequence is a scalar, or the values are a scalar while the "
                              "sequence is not 1-D",
        "search-sorted-shape": "the values' rank or dimensions (all but the last) differ from a sorted "
                               "sequence of rank 2 or more",
    }

    Attrs = SearchSortedAttrs
    attrs: SearchSortedAttrs
    inputs = ("sorted_sequence", "values")

    def infer(self, sorted_sequence: TensorInfo, values: TensorInfo) -> TensorInfo:
        etype = same_element_type(sorted_sequence, values, "the sorted sequence and the values must share one type",
                                  "same-element-type", self.port("values"))
        check(numeric(etype), "numeric-type", f"SearchSorted takes float or integer inputs, found {etype}",
              port=self.port("sorted_sequence"))
        seq, val = sorted_sequence.shape, values.shape
        if seq.rank_is_static:
            check(seq.rank > 0, "search-sorted-rank", "the sorted sequence must not be a scalar",
                  port=self.port("sorted_sequence"))
            if val.rank_is_static and val.rank == 0:
                check(seq.rank == 1, "search-sorted-rank",
                      f"scalar values need a 1-D sorted sequence, found shape {seq}", port=self.port("values"))
            if val.rank_is_static and seq.rank > 1:
                check(val.rank == seq.rank and all(a.compatible(b) for a, b in zip(seq.ranked_dims[:-1], val.ranked_dims[:-1])),
                      "search-sorted-shape", f"values of shape {val} do not match the sorted sequence's shape {seq} "
                      "(same rank, same dimensions but the last)", port=self.port("values"))
        return TensorInfo(ElementType.i64, val)

    def compute(self, sorted_sequence: np.ndarray, values: np.ndarray) -> np.ndarray:
        n = sorted_sequence.shape[-1]
        rows = math.prod(sorted_sequence.shape[:-1])
        width = values.size // rows if rows else 0
        found = count_below(sorted_sequence.reshape(rows, n), values.reshape(rows, width),
                            right=self.attrs.right_mode).reshape(values.shape)
        if values.dtype.kind not in "iub":
            found = np.where(np.isnan(values.astype(np.float32, copy=False)), 0, found)
        return found.astype(np.int64)
