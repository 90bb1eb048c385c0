"""Oracles of the quantization ops: FakeQuantize-1 and FakeConvert-13, one element per step.

Both compute each element in f32 scalars (f16 and bf16 data are read as f32 and the result
rounded once to their type), the precision OpenVINO's reference uses.
"""

import itertools
import math

import ml_dtypes
import numpy as np

F32 = np.float32


def _elements(shape):
    return itertools.product(*(range(d) for d in shape))


def _at(array, index):
    """array[index] with array broadcast to the index's rank, aligned at the right."""
    own = index[len(index) - array.ndim:] if array.ndim else ()
    return array[tuple(i if d > 1 else 0 for i, d in zip(own, array.shape))]


def fake_quantize(x, input_low, input_high, output_low, output_high, *, levels):
    """The spec's expression: clip to the input range, round((x - il) / (ih - il) * (levels-1))
    half to even (Python's round), scale back into the output range."""
    F = np.float64 if x.dtype == np.float64 else F32  # f64 computes in f64, the rest in f32
    out = np.empty(x.shape, F)
    for index in _elements(x.shape):
        v = F(x[index])
        il, ih = F(_at(input_low, index)), F(_at(input_high, index))
        ol, oh = F(_at(output_low, index)), F(_at(output_high, index))
        lowest = ih if ih < il else il  # std::min(il, ih)
        highest = ih if il < ih else il  # std::max(il, ih)
        if v <= lowest:
            out[index] = ol
        elif v > highest:
            out[index] = oh
        else:
            with np.errstate(all="ignore"):
                t = (v - il) / (ih - il) * F(levels - 1)
                level = F(round(float(t))) if np.isfinite(t) else t
                out[index] = level / F(levels - 1) * (oh - ol) + ol
    return out.astype(x.dtype)


F8 = {"f8e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "f8e5m2": (ml_dtypes.float8_e5m2, 57344.0)}


def fake_convert(data, scale, shift=None, *, destination_type):
    """y = data * scale - shift in the data's type; y to f16, then to the f8 type (ml_dtypes'
    nearest-even conversion, past the largest value saturated to it), then
    (y + shift) / scale."""
    f8, largest = F8[destination_type]
    out = np.empty(data.shape, data.dtype)
    for index in _elements(data.shape):
        s = F32(_at(scale, index))
        b = F32(0) if shift is None else F32(_at(shift, index))
        with np.errstate(all="ignore"):
            y = np.asarray(F32(data[index]) * s - b).astype(data.dtype).astype(np.float32)
            h = float(np.float16(y))
            if abs(h) > largest:  # saturation (infinities too)
                h = math.copysign(largest, h)
            elif h == h:
                h = float(np.float32(h).astype(f8))
            out[index] = np.asarray((F32(h) + b) / s).astype(data.dtype)
    return out
