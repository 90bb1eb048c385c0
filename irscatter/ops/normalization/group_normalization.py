"""GroupNormalization-12: normalization over groups of channels, then a per-channel scale and bias.

The channels (axis 1 of data of rank 2 or more) are split into `num_groups` groups of equal size;
for each batch entry and group, the mean and the variance (the mean of the squared differences)
are taken over the group's channels and every other axis, and

    output = (data - mean) / sqrt(variance + epsilon) * scale[c] + bias[c]

`num_groups` must be positive, at most the number of channels and divide it; scale and bias are
1-D tensors as long as the channel axis; all three inputs share one floating-point type (OpenVINO
lets the types differ; the spec gives them one type T). f16 and bf16 compute in f32 and round
once; epsilon is taken in the compute type, as OpenVINO's reference does.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common import accel, threads
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.normalization.core import COMPILED_TYPES, KERNELS, channels_of, compiled_moments
from irscatter.ops.registry import register

# What an element of numpy's path weighs against a multiply-add when choosing the parts: seven
# passes, two of them reductions, as in `blocks.ROW_ELEMENT_WORK`'s Softmax.
NUMPY_ELEMENT_WORK = 128


@register("GroupNormalization", 12)
class GroupNormalization(Op, accel.LoadsOnSecondCall):
    labels = {
        "group-count": "num_groups is not positive, or exceeds the number of channels",
        "group-divide": "the number of channels is not a multiple of num_groups",
    }

    class Attrs(OpAttrs):
        num_groups: int
        epsilon: float
    attrs: Attrs

    inputs = ("data", "scale", "bias")

    def __init__(self, layer) -> None:
        super().__init__(layer)
        check(self.attrs.num_groups > 0, "group-count",
              f"num_groups must be a positive integer, found {self.attrs.num_groups}", port=self.port("num_groups"))

    def infer(self, data: TensorInfo, scale: TensorInfo, bias: TensorInfo) -> TensorInfo:
        etype = same_element_type(data, scale, "scale must have the data's element type", "same-element-type",
                                  self.port("scale"))
        etype = same_element_type(TensorInfo(etype, data.shape), bias, "bias must have the data's element type",
                                  "same-element-type", self.port("bias"))
        check_float(self, etype, "data")
        channels = channels_of(self, data, {"scale": scale, "bias": bias})
        if channels.is_static:
            c, g = int(channels), self.attrs.num_groups
            check(g <= c, "group-count", f"num_groups {g} exceeds the {c} channels", port=self.port("num_groups"))
            check(c % g == 0, "group-divide", f"{c} channels do not split into {g} groups of equal size",
                  port=self.port("num_groups"))
        return TensorInfo(etype, data.shape)

    def compute(self, data: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> np.ndarray:
        etype = ElementType.from_dtype(data.dtype)
        dtype = compute_dtype(etype)
        n, g = data.shape[0], self.attrs.num_groups
        groups = data.astype(dtype, copy=False).reshape(n, g, math.prod(data.shape[1:]) // g)
        compiled = self.takes_compiled(KERNELS, data.size)  # (a first call takes numpy's path: `accel.loads`)
        if compiled and groups.size and dtype in COMPILED_TYPES and groups.flags.c_contiguous:
            out = self._compiled(groups, scale, bias, dtype, math.prod(data.shape[2:]))
            return from_compute(out.reshape(data.shape), etype)
        rows = groups.reshape(n * g, groups.shape[2])  # a row per group of each sample
        out = np.empty(rows.shape, dtype)
        # (per group, its channels' scale and bias along its row)
        scale, bias = (v.astype(dtype, copy=False).reshape(g, -1, 1) for v in (scale, bias))
        spans = threads.spans(n * g, threads.parts(rows.size * NUMPY_ELEMENT_WORK)) if rows.size else [(0, 0)]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if len(spans) == 1:
                self._numpy_rows(rows, out, scale, bias, 0)
            else:
                threads.run([partial(self._numpy_rows, rows[lo:hi], out[lo:hi], scale, bias, lo) for lo, hi in spans])
        return from_compute(out.reshape(data.shape), etype)

    def _numpy_rows(self, rows: np.ndarray, out: np.ndarray, scale: np.ndarray, bias: np.ndarray, first: int) -> None:
        """numpy's path for groups' rows (rows [groups, elements]; `first`: the first one's index
        over the samples' groups), into `out`: each row's sums are numpy's loop over that
        contiguous row alone, so a part's rows come out as in one call."""
        if not out.size:
            return
        dtype = rows.dtype
        # sum / count rather than np.mean, which warns on the empty groups of size-0 data
        count = dtype.type(rows.shape[1])
        np.subtract(rows, np.add.reduce(rows, axis=1, keepdims=True, dtype=dtype) / count, out=out)
        variance = np.add.reduce(out * out, axis=1, keepdims=True, dtype=dtype) / count
        np.divide(out, np.sqrt(variance + dtype.type(self.attrs.epsilon)), out=out)
        g, per_group = scale.shape[0], scale.shape[1]
        which = np.arange(first, first + len(rows)) % g  # each row's group
        channels = out.reshape(len(rows), per_group, -1)
        channels *= scale[which]
        channels += bias[which]

    def _compiled(self, groups: np.ndarray, scale: np.ndarray, bias: np.ndarray, dtype: np.dtype,
                  per_channel: int) -> np.ndarray:
        """The numpy path's bits in two compiled passes around numpy's two sums over each group
        (`norm_kernels`), on the thread policy's parts (ranges of channels, so that one group
        splits too): seven passes over the data, five of them making an array, become four."""
        from irscatter.ops.normalization import norm_kernels  # (imports numba: only when used)

        rows = groups.reshape(-1, per_channel)  # a row per channel of each sample
        means, deviations, out, spans = compiled_moments(groups.reshape(-1, groups.shape[2]), rows, self.attrs.epsilon,
                                                         inside_sqrt=True)
        scale, bias = (np.ascontiguousarray(v, dtype=dtype).reshape(-1) for v in (scale, bias))
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            # (each part reads its squares' rows no more: it writes the output there)
            threads.run([partial(norm_kernels.normalized, rows[lo:hi], means[lo:hi], deviations[lo:hi], scale, bias,
                                 lo, out[lo:hi]) for lo, hi in spans])
        return out
