"""STFT-15: the short-time Fourier transform of a real signal, [signal_length] or
[batch, signal_length]. Frame f holds the frame_size samples from f * frame_step on, multiplied
by the window; its real DFT gives frame_size // 2 + 1 bins of (real, imaginary). There are
(signal_length - frame_size) // frame_step + 1 frames, so frame_size may not exceed the signal.
The output is [batch?, frames, bins, 2], or [batch?, bins, frames, 2] with transpose_frames.

A window shorter than frame_size is centred in it with zeros, (frame_size - window_length) // 2
on the left: the spec page of STFT does not say so, that of ISTFT does, and OpenVINO's reference
does it for both. A window longer than frame_size is refused, as OpenVINO's shape inference does.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register
from irscatter.ops.signal.core import (
    NAN_PAIR,
    as_pairs,
    check_float_type,
    check_frame_inputs,
    check_window,
    finish,
    padded_window,
    run_inference,
    scalar,
)


class STFTAttrs(OpAttrs):
    transpose_frames: IRBool


@register("STFT", 15)
class STFT(Op):
    Attrs = STFTAttrs
    attrs: STFTAttrs
    inputs = ("signal", "window", "frame_size", "frame_step")

    def infer(self, signal: TensorInfo, window: TensorInfo, frame_size: TensorInfo,
              frame_step: TensorInfo) -> TensorInfo:
        check_float_type(self, signal, "signal")
        etype = same_element_type(signal, window, "signal and window must share one element type",
                                  "same-element-type", self.port("window"))
        size, step = check_frame_inputs(self, frame_size, frame_step)
        check_window(self, window, size)
        if not signal.shape.rank_is_static:
            return TensorInfo(etype, PartialShape.dynamic_rank())
        rank = signal.shape.rank
        check(rank in (1, 2), "data-rank", f"signal must be 1-D or 2-D, found shape {signal.shape}",
              port=self.port("signal"))
        length = signal.shape[rank - 1]
        if size is not None and length.is_static:
            check(size <= int(length), "frame-value",
                  f"frame_size {size} is longer than the signal ({int(length)} samples)", port=self.port("frame_size"))
        frames = bins = Dimension.dynamic()
        if size is not None:
            bins = Dimension.static(size // 2 + 1)
            if step is not None and length.is_static:
                frames = Dimension.static((int(length) - size) // step + 1)
        dims = [frames, bins] if not self.attrs.transpose_frames else [bins, frames]
        shape = PartialShape.of([*list(signal.shape)[:-1], *dims, Dimension.static(2)])
        return TensorInfo(etype, shape)

    def compute(self, signal: np.ndarray, window: np.ndarray, frame_size: np.ndarray,
                frame_step: np.ndarray) -> np.ndarray:
        shape = run_inference(self.infer, signal, window, frame_size, frame_step).shape.to_tuple()
        etype = ElementType.from_dtype(signal.dtype)
        if math.prod(shape) == 0:
            return np.zeros(shape, etype.dtype)
        size, step = scalar(frame_size), scalar(frame_step)
        rows = signal.astype(np.float64).reshape(-1, signal.shape[-1])
        check_allocation([rows.shape[0], (rows.shape[1] - size) // step + 1, size], 16)
        frames = sliding_window_view(rows, size, axis=-1)[:, ::step, :] * padded_window(window, size)
        spectrum = np.fft.rfft(frames, axis=-1)
        spectrum = np.where(np.isnan(frames).any(axis=-1, keepdims=True), NAN_PAIR, spectrum)
        out = as_pairs(spectrum)  # [rows, frames, bins, 2]
        if self.attrs.transpose_frames:
            out = out.transpose(0, 2, 1, 3)
        return finish(out.reshape(shape), etype)
