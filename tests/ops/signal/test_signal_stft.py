"""STFT-15 against OpenVINO's CPU plugin and the literal sums of `oracles.signal`.

Cases: 1-D and 2-D signals (a batch of 0 too), frame_size from 1 to the whole signal, even and
odd, frame_step 1 to past the signal, windows of length 1 to frame_size (centred with zeros),
transpose_frames false and true, i32 and i64 frame inputs, f32, f16, bf16, f64 (f64 against the
oracle alone: the plugin computes it in f32), NaN, -0.0 and a denormal among the values.

Tolerance: 2 ulps of the output type plus 8 ulps of f32 (of f64 for f64) times
sum |signal| * max |window|: an FFT's error scales with the magnitudes it sums.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles.signal import stft

rng = np.random.default_rng(1515)
FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]


def _case(cid, signal, window, size, step, transpose, *, index=np.int64, **kw):
    finite = np.abs(signal.astype(np.float64))
    eps = 2.0**-52 if signal.dtype == np.float64 else 2.0**-23
    atol = 8 * eps * float(finite[np.isfinite(finite)].sum()) * float(np.abs(window.astype(np.float64)).max()) + 1e-30
    if signal.dtype == np.float64:
        kw.setdefault("openvino", "none")
        kw.setdefault("why", "OpenVINO's CPU plugin computes f64 in f32; the oracle judges")
    if signal.size == 0:
        kw.setdefault("openvino", "none")
        kw.setdefault("why", "OpenVINO fails on an empty batch; the oracle judges")
    return Case(cid, "STFT", "opset15",
                [Input("signal", signal), Input("window", window), Input("frame_size", np.array(size, index), const=True),
                 Input("frame_step", np.array(step, index), const=True)],
                {"transpose_frames": transpose},
                oracle=lambda s, w, fs, st: stft(s, w, fs, st, transpose_frames=transpose), ulps=2, atol=atol, **kw)


def _cases():
    out = []
    for dtype in FLOATS:
        name = np.dtype(dtype).name
        for k, (shape, size, step, wlen) in enumerate([((16,), 4, 2, 4), ((3, 13), 5, 3, 3), ((2, 9), 9, 1, 9),
                                                       ((11,), 1, 4, 1), ((2, 10), 6, 20, 2), ((1, 8), 3, 1, 2)]):
            signal = rng.uniform(-4, 4, shape)
            if k == 1:  # no infinities: the inf/NaN pattern they leave depends on the order of the sums
                signal.reshape(-1)[rng.choice(signal.size, 3, replace=False)] = [np.nan, -0.0, 1e-45]
            signal = signal.astype(dtype)
            window = rng.uniform(0.2, 1.2, wlen).astype(dtype)
            for transpose in (False, True):
                out.append(_case(f"stft-{name}-{k}-{transpose}", signal, window, size, step, transpose,
                                 index=np.int32 if k % 2 else np.int64))
    out.append(_case("stft-empty-batch", np.zeros((0, 8), np.float32), np.ones(3, np.float32), 4, 2, False))
    return out


def _errors():
    def err(cid, label, signal=None, window=None, size=4, step=2, index=np.int64, **kw):
        signal = np.zeros((2, 8), np.float32) if signal is None else signal
        window = np.ones(3, signal.dtype if signal.dtype.kind == "f" else np.float32) if window is None else window
        size = np.array(size, index)
        return Case(f"stft-err-{cid}", "STFT", "opset15",
                    [Input("signal", signal), Input("window", window), Input("frame_size", size, const=True),
                     Input("frame_step", np.array(step, np.int64), const=True)], {"transpose_frames": False},
                    error=label)
    return [
        err("rank", "data-rank", signal=np.zeros((2, 2, 8), np.float32)),
        err("int", "float-type", signal=np.zeros((2, 8), np.int32), window=np.ones(3, np.int32)),
        err("types", "same-element-type", window=np.ones(3, np.float16)),
        err("long-frame", "frame-value", size=9),
        err("zero-frame", "frame-value", size=0),
        err("zero-step", "frame-value", step=0),
        err("frame-type", "frame-type", size=4.0, index=np.float32),
        err("frame-shape", "frame-shape", size=[4]),
        err("long-window", "window-shape", window=np.ones(5, np.float32)),
        err("empty-window", "window-shape", window=np.ones(0, np.float32)),
        err("window-2d", "window-shape", window=np.ones((1, 3), np.float32)),
        Case("stft-err-attribute", "STFT", "opset15",
             [Input("signal", np.zeros(8, np.float32)), Input("window", np.ones(3, np.float32)),
              Input("frame_size", np.array(4), const=True), Input("frame_step", np.array(2), const=True)],
             {"transpose_frames": "maybe"}, error="attributes"),
    ]


CASES = _cases() + _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_stft(case):
    harness.check(case, CASES)
