"""BatchNormInference-1 and -5: per-channel normalization with given statistics.

    output = (data - mean[c]) / sqrt(variance[c] + epsilon) * gamma[c] + beta[c]

c being the index along axis 1 of the data (rank 2 or more, at least one channel). gamma, beta,
mean and variance are 1-D tensors as long as the channel axis; all five inputs share one
floating-point type (f16 and bf16 compute in f32 and round once; epsilon is taken in the compute
type, as OpenVINO's reference does). epsilon must not be negative.

The versions differ only in the order of their inputs: BatchNormInference-5 takes
(data, gamma, beta, mean, variance) and BatchNormInference-1 takes (gamma, beta, data, mean,
variance), as OpenVINO's opset1 op does. The spec's page for BatchNormInference-1 is a copy of the
-5 page (it even names itself BatchNormInference-5) and lists the data first; OpenVINO reads and
writes opset1 IR files with gamma and beta first, and so does irscatter.
"""

from __future__ import annotations

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.base import Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.numeric import compute_dtype, from_compute
from irscatter.ops.common.types import check_float, same_element_type
from irscatter.ops.normalization.core import channels_of
from irscatter.ops.registry import register

CHANNEL_INPUTS = ("gamma", "beta", "mean", "variance")


@register("BatchNormInference", 1)
class BatchNormInference(Op):
    labels = {
        "epsilon-range": "BatchNormInference's epsilon is negative",
        "channel-count": "the data's channel axis has no channels",
    }

    class Attrs(OpAttrs):
        epsilon: float
    attrs: Attrs

    inputs = ("gamma", "beta", "data", "mean", "variance")

    def __init__(self, layer) -> None:
        super().__init__(layer)
        check(self.attrs.epsilon >= 0, "epsilon-range", f"epsilon must not be negative, found {self.attrs.epsilon}",
              port=self.port("epsilon"))

    def _by_name(self, values: tuple) -> dict:
        return dict(zip(self.inputs, values))

    def infer(self, *infos: TensorInfo) -> TensorInfo:
        named = self._by_name(infos)
        data = named["data"]
        etype = data.etype
        for name in CHANNEL_INPUTS:
            etype = same_element_type(TensorInfo(etype, data.shape), named[name],
                                      f"{name} must have the data's element type", "same-element-type",
                                      self.port(name))
        check_float(self, etype, "data")
        channels = channels_of(self, data, {name: named[name] for name in CHANNEL_INPUTS})
        check(not channels.is_static or int(channels) >= 1, "channel-count",
              "the data must have at least one channel", port=self.port("data"))
        return TensorInfo(etype, data.shape)

    def compute(self, *arrays: np.ndarray) -> np.ndarray:
        data = arrays[self.inputs.index("data")]
        etype = ElementType.from_dtype(data.dtype)
        dtype = compute_dtype(etype)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            mean, denominator, gamma, beta = self._per_channel(self._by_name(arrays), dtype, data.ndim)
            out = np.subtract(data.astype(dtype, copy=False), mean)
            np.divide(out, denominator, out=out)
            np.multiply(out, gamma, out=out)
            np.add(out, beta, out=out)
        return from_compute(out, etype)

    def _per_channel(self, named: dict, dtype: np.dtype, rank: int) -> tuple[np.ndarray, ...]:
        """mean, sqrt(variance + epsilon), gamma and beta in the compute dtype as [C, 1, ..., 1],
        to broadcast along axis 1 of the data. Kept while the same read-only arrays (Consts'
        values, as in every converted model) come again: they cannot have changed."""
        given = tuple(map(named.__getitem__, CHANNEL_INPUTS))

        def work_out() -> tuple[np.ndarray, ...]:
            shape = (-1,) + (1,) * (rank - 2)
            gamma, beta, mean, variance = (a.astype(dtype, copy=False).reshape(shape) for a in given)
            return mean, np.sqrt(variance + dtype.type(self.attrs.epsilon)), gamma, beta
        return self.per_constant((dtype, rank), given, work_out)


@register("BatchNormInference", 5)
class BatchNormInference5(BatchNormInference):
    inputs = ("data", "gamma", "beta", "mean", "variance")
