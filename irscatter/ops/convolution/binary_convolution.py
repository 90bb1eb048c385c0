"""BinaryConvolution-1: a 2-D convolution of 0/1 data with 1-bit filters, in the spec's only mode,
xnor-popcount. A data value 1 is the bit 1 and 0 the bit 0 (read as +1 and -1); each tap adds
+1 where the data's bit equals the filter's and -1 where it does not, so an output element is
2 * popcount(xnor(window, filter)) - B, with B = C * KY * KX bits (the padded taps included).
The pad area holds `pad_value`, converted to the data's element type and read like the data
(an integer type truncates and wraps it, as the reference's C++ cast does on x86).

The spec defines the data as 0s and 1s only. For any other value irscatter follows OpenVINO's
core reference, which compares the value with the filter bit for equality: such a value (NaN,
0.5, -1, 2, and a pad_value other than 0 and 1) matches neither bit and adds -1 at every tap.
-0.0 equals 0. OpenVINO's core reference has no evaluate for BinaryConvolution, and its CPU
plugin answers differently on two runs of the same inputs here, so neither can judge.

Data: any numeric type (the output has the data's type). Integer outputs wrap modulo 2^bits,
as the reference's accumulation in the data's type does; float outputs are the exact count
rounded once (the reference counts in the data's type, which loses ones past 2048 in f16).
Filters: u1, [C_OUT, C_IN, KY, KX] (packed eight to a byte in the weights, element 0 in the
most significant bit; the loader unpacks them). Data and filters have rank 4.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import IntList, Lower, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import convert_array
from irscatter.ops.convolution.core import (
    check_attrs,
    check_window,
    forward_output_dims,
    forward_pads,
    pad_spatial,
    sizes,
    windows,
)
from irscatter.ops.registry import register


class BinaryConvolutionAttrs(OpAttrs):
    strides: IntList
    pads_begin: IntList
    pads_end: IntList
    dilations: IntList
    mode: Annotated[Literal["xnor-popcount"], Lower]
    pad_value: float
    auto_pad: Annotated[Literal["explicit", "valid", "same_upper", "same_lower"], Lower] = "explicit"


def _pad_value(value: float, etype: ElementType):
    """The pad value as the data's type holds it: rounded to a float type, or truncated and
    wrapped modulo 2^bits into an integer type (C++'s cast of an f32 on x86, as OpenVINO's
    reference does; -1 is 255 in u8, NaN and infinities 0)."""
    single = np.float32(value)
    if etype.is_integral:
        whole = int(np.trunc(single)) if np.isfinite(single) and abs(single) < 2.0**63 else 0
        return np.array(whole, np.int64).astype(etype.dtype)
    return convert_array(np.array(single), ElementType.f32, etype)


@register("BinaryConvolution", 1)
class BinaryConvolution(Op):
    labels = {
        "binary-filter-type": "BinaryConvolution's filters are not of element type u1",
    }

    Attrs = BinaryConvolutionAttrs
    attrs: BinaryConvolutionAttrs
    inputs = ("data", "filters")

    def infer(self, data: TensorInfo, filters: TensorInfo) -> TensorInfo:
        check(data.etype is ElementType.dynamic or data.etype.is_float and not data.etype.is_packed
              or data.etype.is_integral and data.etype.dtype.itemsize * 8 == data.etype.bitwidth,
              "numeric-type", f"BinaryConvolution is not defined for {data.etype} data (it takes a numeric type)",
              port=self.port("data"))
        check(filters.etype in (ElementType.u1, ElementType.dynamic), "binary-filter-type",
              f"the filters must be of type u1, found {filters.etype}", port=self.port("filters"))
        for name, info, label in (("data", data, "data-rank"), ("filters", filters, "conv-filter-rank")):
            if info.shape.rank_is_static:
                check(info.shape.rank == 4, label, f"{name} must have rank 4, found {info.shape}",
                      port=self.port(name))
        a = self.attrs
        check_attrs(self, 2, strides=a.strides, dilations=a.dilations, pads_begin=a.pads_begin,
                    pads_end=a.pads_end, auto_pad=a.auto_pad)
        d = sizes(data.shape.ranked_dims) if data.shape.rank_is_static else [None] * 4
        f = sizes(filters.shape.ranked_dims) if filters.shape.rank_is_static else [None] * 4
        if d[1] is not None and f[1] is not None:
            check(d[1] == f[1], "conv-channels", f"the data has {d[1]} channels, the filters take {f[1]}",
                  port=self.port("filters"))
        out = self._spatial(d[2:], f[2:])[0]
        dims = [d[0], f[0], *out]
        return TensorInfo(data.etype, PartialShape.of([Dimension.dynamic() if v is None else v for v in dims]))

    def _spatial(self, in_dims, kernel):
        a = self.attrs
        begin, end = forward_pads(a.auto_pad, in_dims, kernel, a.strides, a.dilations, a.pads_begin, a.pads_end)
        if a.auto_pad in ("explicit", "valid"):
            check_window(self, in_dims, kernel, a.dilations, begin, end)
        return forward_output_dims(a.auto_pad, in_dims, kernel, a.strides, a.dilations, begin, end), begin, end

    def compute(self, data: np.ndarray, filters: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        a = self.attrs
        kernel = list(filters.shape[2:])
        (oh, ow), begin, end = self._spatial(list(data.shape[2:]), kernel)
        n, o = data.shape[0], filters.shape[0]
        bits = filters.astype(np.float64)  # u1: 0 or 1
        pad = _pad_value(a.pad_value, etype)
        ones = pad_spatial((data == 1).astype(np.float64), begin, end, float(pad == 1))
        zeros = pad_spatial((data == 0).astype(np.float64), begin, end, float(pad == 0))
        if 0 in (n, o, oh, ow):
            return np.zeros((n, o, oh, ow), data.dtype)
        # popcount = taps where data 1 meets filter 1, plus taps where data 0 meets filter 0
        # (counts in f64: exact far past any tensor's size)
        hits = (np.tensordot(windows(ones, kernel, a.strides, a.dilations), bits, axes=([1, 4, 5], [1, 2, 3]))
                + np.tensordot(windows(zeros, kernel, a.strides, a.dilations), 1.0 - bits, axes=([1, 4, 5], [1, 2, 3])))
        total = data.shape[1] * kernel[0] * kernel[1]
        out = np.moveaxis(2 * hits.astype(np.int64) - total, 3, 1)  # [N, OH, OW, O] -> [N, O, OH, OW]
        if etype.is_integral:
            return np.ascontiguousarray(out).astype(data.dtype)  # modulo 2^bits, as the reference's sum
        return np.ascontiguousarray(out.astype(np.float64).astype(data.dtype))
