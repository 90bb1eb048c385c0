"""ISTFT-16 against OpenVINO's CPU plugin and the literal sums of `oracles.signal`.

Cases: 3-D and 4-D data, even and odd frame_size, frame_step below, at and past frame_size,
windows of length 1 to frame_size (centred with zeros; one with zero ends, so that some samples
have no window weight and are 0), center and normalized false and true, signal_length absent,
shorter, equal and longer than the default (zeros past the signal), as a scalar and as [1],
i32 and i64, f32, f16, bf16, f64 (f64 against the oracle alone: the plugin computes it in f32),
and a NaN pair among the values.

The spec's default length with center, (frames - 1) * frame_step, is one sample shorter than
OpenVINO's when frame_size is odd: those cases are judged by the oracle alone (so is a
signal_length of 0, which OpenVINO's reference reads as "the default").

Tolerance: 2 ulps of the output type plus 16 ulps of f32 (of f64 for f64) times
sum |data| * max |window| / (smallest non-zero squared-window sum), times sqrt(frame_size)
when normalized: the overlap-added inverse FFTs err with the magnitudes they sum, and the
division by the window weight scales that.
"""

import math

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles.signal import istft

rng = np.random.default_rng(1616)
FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]
ODD_CENTER = ("with center, the spec's default length is (frames - 1) * frame_step; OpenVINO's is one sample "
              "longer for an odd frame_size; the oracle judges")


def _case(cid, data, window, size, step, center, normalized, length=None, *, index=np.int64, **kw):
    finite = np.abs(data.astype(np.float64))
    eps = 2.0**-52 if data.dtype == np.float64 else 2.0**-23
    w = np.abs(window.astype(np.float64))
    atol = (16 * eps * float(finite[np.isfinite(finite)].sum()) * float(w.max()) / float((w[w > 0] ** 2).min())
            * (math.sqrt(size) if normalized else 1.0)) + 1e-30
    inputs = [Input("data", data), Input("window", window), Input("frame_size", np.array(size, index), const=True),
              Input("frame_step", np.array(step, index), const=True)]
    if length is not None:
        inputs.append(Input("signal_length", np.array(length, index), const=True))
    if data.dtype == np.float64:
        kw.setdefault("openvino", "none")
        kw.setdefault("why", "OpenVINO's CPU plugin computes f64 in f32; the oracle judges")
    if length is None and center and size % 2:
        kw.setdefault("openvino", "none")
        kw.setdefault("why", ODD_CENTER)
    return Case(cid, "ISTFT", "opset16", inputs, {"center": center, "normalized": normalized},
                oracle=lambda d, w, fs, st, n=None: istft(d, w, fs, st, n, center=center, normalized=normalized),
                ulps=2, atol=atol, **kw)


def _data(shape, dtype, edges=False):
    x = rng.uniform(-4, 4, (*shape, 2))
    if edges:
        x.reshape(-1, 2)[int(rng.integers(0, x.size // 2))] = np.nan
    return x.astype(dtype)


def _cases():
    out = []
    # (batch, frame_size, frame_step, window length, frames)
    setups = [((), 8, 2, 8, 5), ((2,), 7, 3, 5, 4), ((), 6, 6, 3, 3), ((3,), 5, 1, 5, 6), ((1,), 4, 5, 1, 3)]
    for dtype in FLOATS:
        name = np.dtype(dtype).name
        for k, (batch, size, step, wlen, frames) in enumerate(setups):
            data = _data((*batch, size // 2 + 1, frames), dtype, edges=(k == 3))
            window = rng.uniform(0.5, 1.5, wlen).astype(dtype)
            full = (frames - 1) * step + size
            for center in (False, True):
                for normalized in (False, True):
                    cid = f"istft-{name}-{k}-c{int(center)}-n{int(normalized)}"
                    out.append(_case(cid, data, window, size, step, center, normalized,
                                     index=np.int32 if k % 2 else np.int64))
                lengths = [full - size // 2 - 3, full + 4] if center else [full - 3, full + 4]
                for n in lengths:
                    out.append(_case(f"istft-{name}-{k}-c{int(center)}-len{n}", data, window, size, step, center,
                                     False, n))
    x = _data((5, 4), np.float32)
    zero_ends = np.array([0.0, 1.0, 0.5, 0.0], np.float32)
    out += [
        _case("istft-zero-ends", x, zero_ends, 8, 4, False, False),
        _case("istft-zero-ends-center", x, zero_ends, 8, 4, True, True),
        _case("istft-length-1d", x, np.ones(8, np.float32), 8, 2, False, False, [11]),
        _case("istft-length-zero", x, np.ones(8, np.float32), 8, 2, False, False, 0, openvino="none",
              why="a signal_length of 0: OpenVINO's reference reads it as the default length; the oracle judges"),
    ]
    return out


def _errors():
    def err(cid, label, data=None, window=None, size=8, step=2, length=None, length_type=np.int64, **attrs):
        data = np.zeros((5, 4, 2), np.float32) if data is None else data
        window = np.ones(8, np.float32) if window is None else window
        inputs = [Input("data", data), Input("window", window), Input("frame_size", np.array(size, np.int64), const=True),
                  Input("frame_step", np.array(step, np.int64), const=True)]
        if length is not None:
            inputs.append(Input("signal_length", np.array(length, length_type), const=True))
        return Case(f"istft-err-{cid}", "ISTFT", "opset16", inputs,
                    {"center": attrs.get("center", False), "normalized": False}, error=label)
    return [
        err("rank", "data-rank", data=np.zeros((5, 4), np.float32)),
        err("pair", "complex-shape", data=np.zeros((5, 4, 3), np.float32)),
        err("bins", "istft-bins", size=6, window=np.ones(4, np.float32)),
        err("frames", "istft-frames", data=np.zeros((5, 0, 2), np.float32)),
        err("int", "float-type", data=np.zeros((5, 4, 2), np.int32), window=np.ones(8, np.int32)),
        err("types", "same-element-type", window=np.ones(8, np.float16)),
        err("step", "frame-value", step=0),
        err("long-window", "window-shape", window=np.ones(9, np.float32)),
        err("length-negative", "signal-length-value", length=-1),
        err("length-shape", "signal-length-shape", length=[3, 4]),
        err("length-type", "signal-length-type", length=3.0, length_type=np.float32),
        err("length-huge", "tensor-limit", length=2**40),
    ]


CASES = _cases() + _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_istft(case):
    harness.check(case, CASES)
