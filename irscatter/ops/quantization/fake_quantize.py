"""FakeQuantize-1: element-wise linear quantization of X onto `levels` evenly spaced values
between output_low and output_high, after clipping X to [input_low, input_high].

Each output element is, with the four range inputs broadcast to X's shape:

    x <= min(input_low, input_high)  ->  output_low
    x >  max(input_low, input_high)  ->  output_high
    otherwise  ->  round((x - input_low) / (input_high - input_low) * (levels - 1))
                   / (levels - 1) * (output_high - output_low) + output_low

`round` rounds half to even (the spec writes Python's `round`; OpenVINO's reference uses
`std::nearbyint`, the same rule), so 0.5 levels goes to 0 and 1.5 to 2. min and max are C++'s
`std::min`/`std::max`, as the reference computes them: when one bound is NaN the first
argument is kept (min(NaN, 1) is NaN, min(1, NaN) is 1). input_low == input_high leaves no
inner interval: x <= input_low gives output_low and anything above output_high. A NaN x
fails both comparisons and stays NaN through the formula. An inverted range (input_low >
input_high) still follows the formula on (input_high, input_low], with a negative scale.

f16 and bf16 compute in f32 and round once, as OpenVINO's reference does (it converts them
to f32 around the f32 kernel). The spec's T_F is "any floating point type": integers are
refused, although the reference also evaluates i32/i64/u32/u64.

Broadcasting: the spec asks each range input to be broadcastable *to* X's shape (the output
has X's shape). OpenVINO's shape inference merges bidirectionally and so accepts a range
input larger than X (X [1,3,1,1] with input_low [1,3,4,5]) and still gives X's shape;
irscatter refuses that (`fq-range-shape`). With `pdpd`, a range input is aligned at the
right (the attribute has no axis), which is also how OpenVINO's reference indexes it.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from irscatter.ir.broadcast import BroadcastError, broadcast
from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Lower, Op, OpAttrs, TensorInfo, check, fail
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.registry import register

RANGES = ("input_low", "input_high", "output_low", "output_high")


def fake_quantize(x: np.ndarray, in_low: np.ndarray, in_high: np.ndarray, out_low: np.ndarray,
                  out_high: np.ndarray, levels: int) -> np.ndarray:
    """The quantization of float arrays already in their compute dtype, broadcast to x."""
    steps = x.dtype.type(levels - 1)
    # std::min(a, b) is `b < a ? b : a` and std::max(a, b) is `a < b ? b : a`
    lowest = np.where(in_high < in_low, in_high, in_low)
    highest = np.where(in_low < in_high, in_high, in_low)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        level = np.rint((x - in_low) / (in_high - in_low) * steps)
        inner = level / steps * (out_high - out_low) + out_low
    out = np.where(x > highest, out_high, inner)
    out = np.where(x <= lowest, out_low, out)
    return out.astype(x.dtype, copy=False)


@register("FakeQuantize", 1)
class FakeQuantize(Op):
    labels = {
        "fq-range-shape": "a range input does not broadcast to the shape of X",
    }

    class Attrs(OpAttrs):
        levels: Annotated[int, Field(ge=2)]
        auto_broadcast: Annotated[Literal["none", "numpy", "pdpd"], Lower] = "numpy"
    attrs: Attrs

    inputs = ("X", *RANGES)
    elementwise = True

    def infer(self, x: TensorInfo, *ranges: TensorInfo) -> TensorInfo:
        etype = x.etype
        for name, r in zip(RANGES, ranges):
            etype = same_element_type(TensorInfo(etype, x.shape), r, f"{name} must have the element type of X",
                                      "same-element-type", self.port(name))
        check_float(self, etype, "X")
        for name, r in zip(RANGES, ranges):
            try:
                merged = broadcast(self.attrs.auto_broadcast, x.shape, r.shape)
            except BroadcastError as e:
                fail("broadcast", f"{name} {r.shape} does not broadcast with X {x.shape}: {e}",
                     port=self.port(name))
            if merged.rank_is_static and x.shape.rank_is_static:
                check(merged.rank == x.shape.rank and all(
                    not (m.is_static and d.is_static and m != d) for m, d in zip(merged.ranked_dims, x.shape.ranked_dims)),
                    "fq-range-shape", f"{name} {r.shape} would broadcast X {x.shape} to {merged}; "
                    "a range input must broadcast to the shape of X", port=self.port(name))
        return TensorInfo(x.etype if x.etype is not ElementType.dynamic else etype, x.shape)

    def compute(self, x: np.ndarray, *ranges: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(x.dtype)
        work = compute_dtype(etype)
        data, in_low, in_high, out_low, out_high = (a.astype(work, copy=False) for a in (x, *ranges))
        return from_compute(fake_quantize(data, in_low, in_high, out_low, out_high, self.attrs.levels), etype)
