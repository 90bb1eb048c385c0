"""Col2Im-15: sliding blocks (the columns of an im2col) summed back into an image.

The data [N, C * kh * kw, L] (or [C * kh * kw, L] unbatched) holds, per channel c and kernel tap
(i, j) (row c * kh * kw + i * kw + j), one value per block; block (lr, lc) of the
Lr x Lc grid puts it at image position (lr * stride_r - pad_begin_r + i * dilation_r,
lc * stride_c - pad_begin_c + j * dilation_c). Positions in the padding are dropped, and
values landing on one position are summed, tap by tap in row-major (i, j) order as OpenVINO's
reference does: L must equal Lr * Lc with
Lr = floor((output_size_r + pad_begin_r + pad_end_r - dilation_r * (kh - 1) - 1) / stride_r) + 1.

Sums are computed in f32 for f16, bf16 and the 8-bit floats (rounded once), in the type itself
for f32 and f64, and modulo 2^bits for integers. Booleans, strings and the packed codes (nf4,
f4e2m1, f8e8m0) are refused: the op sums.

The spec allows a kernel_size of 0 ("non-negative"), which leaves C undefined (the rows divide
by a product of 0); irscatter refuses it, and an output_size below 1 ("positive integer
numbers"), and a kernel that does not fit in the padded output (Lr or Lc below 1).

OpenVINO departs from the spec in three places irscatter does not follow: it crashes on a layer
that leaves out any of the four attributes (the spec gives each a default), its CPU plugin rounds
the partial sums of bf16 data to bf16, and its core reference evaluates only f32, f16, i8, i32,
i64, u8, u32 and u64 data (the spec allows any type; irscatter takes every type it can sum).
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import IntList, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, convert_array, from_compute
from irscatter.ops.common.types import arithmetic_float
from irscatter.ops.registry import register
from irscatter.ops.spatial.core import int_list, require


class Col2ImAttrs(OpAttrs):
    strides: IntList = (1, 1)
    dilations: IntList = (1, 1)
    pads_begin: IntList = (0, 0)
    pads_end: IntList = (0, 0)


@register("Col2Im", 15)
class Col2Im(Op):
    labels = {
        "col2im-type": "Col2Im sums its data: it takes integer and arithmetic float types only",
        "col2im-input-type": "output_size or kernel_size is not of type i32 or i64",
        "col2im-input-shape": "output_size or kernel_size is not a 1-D tensor of two values",
        "col2im-attribute": "strides, dilations, pads_begin or pads_end do not hold two values, a stride is "
                            "below 1, or a dilation or pad is negative",
        "col2im-kernel": "a kernel_size value is below 1",
        "col2im-output-size": "an output_size value is below 1",
        "col2im-channels": "the data's block dimension does not divide by the product of kernel_size",
        "col2im-blocks": "the data's number of blocks L is not the one output_size, kernel_size and the "
                         "attributes give, or the kernel does not fit in the padded output",
    }

    Attrs = Col2ImAttrs
    attrs: Col2ImAttrs
    inputs = ("data", "output_size", "kernel_size")

    def _check_attrs(self) -> None:
        a = self.attrs
        for name, values, least in (("strides", a.strides, 1), ("dilations", a.dilations, 0),
                                    ("pads_begin", a.pads_begin, 0), ("pads_end", a.pads_end, 0)):
            check(len(values) == 2, "col2im-attribute", f"{name} must hold two values, found {list(values)}",
                  port=self.port(name))
            check(all(v >= least for v in values), "col2im-attribute",
                  f"{name} must be at least {least}, found {list(values)}", port=self.port(name))

    def _sizes(self, value: np.ndarray, name: str, label: str, at_runtime: bool) -> list[int]:
        values = int_list(value)
        require(len(values) == 2, f"{name} must hold two values, found {values}", label="col2im-input-shape",
                port=self.port(name), at_runtime=at_runtime)
        require(all(v >= 1 for v in values), f"{name} values must be at least 1, found {values}", label=label,
                port=self.port(name), at_runtime=at_runtime)
        return values

    def _blocks(self, output: list[int], kernel: list[int], at_runtime: bool) -> tuple[int, int]:
        a, counts = self.attrs, []
        for d in range(2):
            room = output[d] + a.pads_begin[d] + a.pads_end[d] - a.dilations[d] * (kernel[d] - 1) - 1
            require(room >= 0, f"the dilated kernel ({a.dilations[d] * (kernel[d] - 1) + 1}) is larger than the "
                    f"padded output ({output[d] + a.pads_begin[d] + a.pads_end[d]}) along spatial axis {d}",
                    label="col2im-blocks", port=self.port("kernel_size"), at_runtime=at_runtime)
            counts.append(room // a.strides[d] + 1)
        return counts[0], counts[1]

    def _check_data(self, dims: list, kernel: list[int] | None, output: list[int] | None,
                    at_runtime: bool) -> Dimension | int:
        """Checks the data's block rows and L against the known sizes; returns the channel count."""
        rows, length = dims[-2], dims[-1]
        channels: Dimension | int = Dimension.dynamic()
        if kernel is not None and (isinstance(rows, int) or rows.is_static):
            product = kernel[0] * kernel[1]
            require(int(rows) % product == 0, f"the data's block dimension {int(rows)} does not divide by the "
                    f"product of kernel_size {kernel} ({product})", label="col2im-channels",
                    port=self.port("data"), at_runtime=at_runtime)
            channels = int(rows) // product
        if kernel is not None and output is not None:
            lr, lc = self._blocks(output, kernel, at_runtime)
            if isinstance(length, int) or length.is_static:
                require(int(length) == lr * lc, f"the data holds {int(length)} blocks, output_size {output}, "
                        f"kernel_size {kernel} and the attributes give {lr} x {lc} = {lr * lc}",
                        label="col2im-blocks", port=self.port("data"), at_runtime=at_runtime)
        return channels

    def infer(self, data: TensorInfo, output_size: TensorInfo, kernel_size: TensorInfo) -> TensorInfo:
        self._check_attrs()
        check(data.etype is ElementType.dynamic or data.etype.is_integral or arithmetic_float(data.etype),
              "col2im-type", f"Col2Im sums its data and does not take {data.etype} tensors", port=self.port("data"))
        for name, info in (("output_size", output_size), ("kernel_size", kernel_size)):
            check(info.etype in (ElementType.i32, ElementType.i64, ElementType.dynamic), "col2im-input-type",
                  f"{name} must be of type i32 or i64, found {info.etype}", port=self.port(name))
            if info.shape.rank_is_static:
                check(info.shape.rank == 1 and info.shape[0].contains(2), "col2im-input-shape",
                      f"{name} must be a 1-D tensor of two values, found shape {info.shape}", port=self.port(name))
        kernel = None if kernel_size.value is None else self._sizes(kernel_size.value, "kernel_size", "col2im-kernel",
                                                                    False)
        output = None if output_size.value is None else self._sizes(output_size.value, "output_size",
                                                                    "col2im-output-size", False)
        if not data.shape.rank_is_static:
            return TensorInfo(data.etype, PartialShape.dynamic_rank())
        check(data.shape.rank in (2, 3), "data-rank",
              f"data must be [N, C * kh * kw, L] or unbatched [C * kh * kw, L], found {data.shape}",
              port=self.port("data"))
        channels = self._check_data(list(data.shape.ranked_dims), kernel, output, False)
        spatial = [-1, -1] if output is None else output
        batch = list(data.shape.ranked_dims[:1]) if data.shape.rank == 3 else []
        return TensorInfo(data.etype, PartialShape.of([*batch, channels, *spatial]))

    def compute(self, data: np.ndarray, output_size: np.ndarray, kernel_size: np.ndarray) -> np.ndarray:
        a = self.attrs
        kernel = self._sizes(kernel_size, "kernel_size", "col2im-kernel", True)
        output = self._sizes(output_size, "output_size", "col2im-output-size", True)
        channels = int(self._check_data(list(data.shape), kernel, output, True))  # int dims give an int
        lr, lc = self._blocks(output, kernel, True)
        batched = data.ndim == 3
        n = data.shape[0] if batched else 1
        shape = (n, channels, *output)
        check_allocation(shape, data.dtype.itemsize)
        etype = ElementType.from_dtype(data.dtype)
        if etype.is_integral:
            work = np.dtype(np.uint64 if etype is ElementType.u64 else np.int64)
        else:
            work = compute_dtype(etype)
        blocks = data.reshape(n, channels, kernel[0], kernel[1], lr, lc).astype(work, copy=False)
        image = np.zeros(shape, dtype=work)
        # With no channels the kernel may be far larger than any data: nothing to sum.
        for i in range(kernel[0] if blocks.size else 0):
            r0, r1, top = _taps(lr, a.strides[0], i * a.dilations[0] - a.pads_begin[0], output[0])
            if r0 >= r1:
                continue
            for j in range(kernel[1]):
                c0, c1, left = _taps(lc, a.strides[1], j * a.dilations[1] - a.pads_begin[1], output[1])
                if c0 < c1:
                    image[:, :, top:top + (r1 - r0 - 1) * a.strides[0] + 1:a.strides[0],
                          left:left + (c1 - c0 - 1) * a.strides[1] + 1:a.strides[1]] += blocks[:, :, i, j, r0:r1, c0:c1]
        if etype.is_integral:
            result = convert_array(image, ElementType.from_dtype(work), etype)
        else:
            result = from_compute(image, etype)
        return result if batched else result[0]


def _taps(count: int, stride: int, offset: int, size: int) -> tuple[int, int, int]:
    """Blocks [lo, hi) of `count` whose tap lands inside the output (0 <= b * stride + offset < size),
    and the output position of block lo."""
    lo = max(0, -(offset // stride))
    hi = min(count, max(0, -(-(size - offset) // stride)))
    return lo, max(lo, hi), lo * stride + offset
