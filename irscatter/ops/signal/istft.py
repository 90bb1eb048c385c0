"""ISTFT-16: the inverse short-time Fourier transform, from STFT's [batch?, bins, frames, 2]
(bins = frame_size // 2 + 1) back to a real signal [batch?, signal_length].

Each frame's bins go through the inverse real DFT of length frame_size (the Hermitian
extension of IRDFT), are multiplied by the window (centred in frame_size with zeros, as in
STFT) and overlap-added at f * frame_step; each sample is then divided by the overlap-added
squared window, and is 0 where that sum is 0. With `normalized` the result is multiplied by
sqrt(frame_size) (STFT's normalised output was divided by it). With `center` the first
frame_size // 2 samples of the overlap-added signal are dropped (the padding STFT's caller added).

The output length is signal_length when given (zeros past the overlap-added signal), else
(frames - 1) * frame_step + frame_size, or with `center` (frames - 1) * frame_step, as the spec
page says. OpenVINO (its shape inference, reference and CPU plugin) gives
(frames - 1) * frame_step + frame_size - 2 * (frame_size // 2) with `center`, one sample more
when frame_size is odd; the two agree for an even frame_size. A signal_length of 0 gives an
empty signal, where OpenVINO's reference takes 0 to mean the default length. The data must
hold at least one frame (OpenVINO's reference counts frames - 1 in an unsigned type).
"""

from __future__ import annotations

import math

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import IRBool, Op, OpAttrs, TensorInfo, check
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register
from irscatter.ops.signal.core import (
    INDEX_TYPES,
    as_complex,
    check_float_type,
    check_frame_inputs,
    check_window,
    finish,
    padded_window,
    run_inference,
    scalar,
)


class ISTFTAttrs(OpAttrs):
    center: IRBool
    normalized: IRBool


@register("ISTFT", 16)
class ISTFT(Op):
    labels = {
        "istft-bins": "the data's bins dimension (data_shape[-3]) is not frame_size // 2 + 1",
        "istft-frames": "the data holds no frame",
        "signal-length-type": "signal_length is not of type i32 or i64",
        "signal-length-shape": "signal_length is not a scalar or a 1-element 1-D tensor",
        "signal-length-value": "signal_length is negative",
    }

    Attrs = ISTFTAttrs
    attrs: ISTFTAttrs
    inputs = ("data", "window", "frame_size", "frame_step", "signal_length")
    optional_inputs = 1

    def _length(self, signal_length: TensorInfo | None, frames: Dimension, size: int | None,
                step: int | None) -> Dimension:
        if signal_length is not None:
            check(signal_length.etype is ElementType.dynamic or signal_length.etype in INDEX_TYPES,
                  "signal-length-type", f"signal_length must be of type i32 or i64, found {signal_length.etype}",
                  port=self.port("signal_length"))
            s = signal_length.shape
            if s.rank_is_static:
                check(s.rank == 0 or (s.rank == 1 and s[0].contains(1)), "signal-length-shape",
                      f"signal_length must be a scalar or hold one value, found shape {s}",
                      port=self.port("signal_length"))
            if signal_length.value is None:
                return Dimension.dynamic()
            n = scalar(signal_length.value)
            check(n >= 0, "signal-length-value", f"signal_length must not be negative, found {n}",
                  port=self.port("signal_length"))
            return Dimension.static(n)
        if size is None or step is None or not frames.is_static:
            return Dimension.dynamic()
        return Dimension.static((int(frames) - 1) * step + (0 if self.attrs.center else size))

    def infer(self, data: TensorInfo, window: TensorInfo, frame_size: TensorInfo, frame_step: TensorInfo,
              signal_length: TensorInfo | None = None) -> TensorInfo:
        check_float_type(self, data, "data")
        etype = same_element_type(data, window, "data and window must share one element type",
                                  "same-element-type", self.port("window"))
        size, step = check_frame_inputs(self, frame_size, frame_step)
        check_window(self, window, size)
        frames = Dimension.dynamic()
        batch: list[Dimension] = []
        if data.shape.rank_is_static:
            rank = data.shape.rank
            check(rank in (3, 4), "data-rank", f"data must be 3-D or 4-D, found shape {data.shape}",
                  port=self.port("data"))
            check(data.shape[rank - 1].contains(2), "complex-shape",
                  f"the last dimension of data holds (real, imaginary) and must be 2, found {data.shape}",
                  port=self.port("data"))
            bins, frames = data.shape[rank - 3], data.shape[rank - 2]
            check(frames.max is None or frames.max > 0, "istft-frames", f"data of shape {data.shape} holds no frame",
                  port=self.port("data"))
            if size is not None:
                check(bins.contains(size // 2 + 1), "istft-bins",
                      f"data of shape {data.shape} has {bins} bins; frame_size {size} needs {size // 2 + 1}",
                      port=self.port("data"))
            batch = list(data.shape)[:1] if rank == 4 else []
        length = self._length(signal_length, frames, size, step)
        if not data.shape.rank_is_static:
            return TensorInfo(etype, PartialShape.dynamic_rank())
        shape = PartialShape.of([*batch, length])
        return TensorInfo(etype, shape)

    def compute(self, data: np.ndarray, window: np.ndarray, frame_size: np.ndarray, frame_step: np.ndarray,
                signal_length: np.ndarray | None = None) -> np.ndarray:
        shape = run_inference(self.infer, data, window, frame_size, frame_step, signal_length).shape.to_tuple()
        etype = ElementType.from_dtype(data.dtype)
        size, step = scalar(frame_size), scalar(frame_step)
        spectra = as_complex(data).reshape(-1, *data.shape[-3:-1]).transpose(0, 2, 1)  # [rows, frames, bins]
        rows, count = spectra.shape[0], spectra.shape[1]
        full = (count - 1) * step + size
        out = np.zeros((rows, shape[-1]), np.float64)
        if math.prod(shape) == 0:
            return finish(out.reshape(shape), etype)
        check_allocation([rows, full], 8)
        check_allocation([rows, count, size], 8)
        signals = np.fft.irfft(spectra, n=size, axis=-1)
        signals = np.where(np.isnan(spectra).any(axis=-1, keepdims=True), np.nan, signals)
        win = padded_window(window, size)
        # Overlap-add through one bincount: sample n of frame f lands at f * step + n of its row.
        at = np.arange(count)[:, None] * step + np.arange(size)
        where = (np.arange(rows)[:, None, None] * full + at).reshape(-1)
        summed = np.bincount(where, weights=(signals * win).reshape(-1), minlength=rows * full).reshape(rows, full)
        weight = np.bincount(at.reshape(-1), weights=np.tile(win * win, count), minlength=full)
        with np.errstate(invalid="ignore", over="ignore"):
            restored = np.where(weight != 0, summed / np.where(weight != 0, weight, 1.0), 0.0)
        if self.attrs.normalized:
            restored = restored * math.sqrt(size)
        margin = size // 2 if self.attrs.center else 0
        kept = max(min(shape[-1], full - margin), 0)
        out[:, :kept] = restored[:, margin:margin + kept]
        return finish(out.reshape(shape), etype)
