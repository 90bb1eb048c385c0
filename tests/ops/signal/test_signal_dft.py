"""DFT-7 and IDFT-7 against OpenVINO's CPU plugin and the literal sums of `oracles.signal`.

Cases: complex tensors of rank 1 to 4 (data rank 2 to 5), random axes (some negative, counted
in the complex tensor), with and without signal_size (-1, trimming, zero padding, 0), an empty
axes list, size-0 dimensions, axes and signal_size as Parameters, f32, f16, bf16 and f64 (f64
against the oracle alone: the plugin computes it in f32), NaN, -0.0 and a denormal among the
values. Infinities are left out: the inf/NaN pattern they leave depends on the order of the sums.

Tolerance: 2 ulps of the output type plus an absolute term of 8 ulps of f32 (of f64 for f64)
times the sum of |x| over the input (divided by the transformed size for IDFT): an FFT's error
scales with the magnitudes summed, not with each output, which may cancel to near 0.
"""

import math

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles.signal import dft, idft

rng = np.random.default_rng(707)
FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]


def magnitude_atol(x: np.ndarray, dtype, scale: float = 1.0) -> float:
    finite = np.abs(np.asarray(x, np.float64))
    total = float(finite[np.isfinite(finite)].sum())
    eps = 2.0**-52 if np.dtype(dtype) == np.float64 else 2.0**-23
    return 8 * eps * total * scale + 1e-30


def _complex_values(shape, dtype, edges=False):
    """Pairs in [-4, 4); with `edges`, one (NaN, NaN), a -0.0 and a denormal. A NaN in one part
    only is left out: whether it reaches the other part depends on whether a twiddle factor of
    exactly 1 is multiplied as a complex number (OpenVINO's reference) or skipped (its plugin)."""
    x = rng.uniform(-4, 4, shape).astype(np.float64)
    if edges and x.size >= 6:
        pairs = x.reshape(-1, 2)
        picks = rng.choice(pairs.shape[0], 3, replace=False)
        pairs[picks[0]] = np.nan
        pairs[picks[1], 0] = -0.0
        pairs[picks[2], 1] = np.finfo(np.float32).smallest_subnormal
    return x.astype(dtype)


def _case(cid, op, data, axes, sizes=None, *, const=True, index=np.int64, **kw):
    oracle = dft if op == "DFT" else idft
    inputs = [Input("data", data), Input("axes", np.array(axes, index), const=const)]
    if sizes is not None:
        inputs.append(Input("signal_size", np.array(sizes, index), const=const))
    rank = data.ndim - 1
    lengths = [data.shape[a % rank] if sizes is None or sizes[k] == -1 else sizes[k] for k, a in enumerate(axes)]
    scale = 1.0 / max(math.prod(lengths), 1) if op == "IDFT" else 1.0
    if any(data.shape[a % rank] == 0 and n > 0 for a, n in zip(axes, lengths)):
        kw.setdefault("openvino", "none")
        kw.setdefault("why", "OpenVINO's CPU plugin reads past a size-0 axis it pads (garbage); the oracle judges")
    if np.dtype(data.dtype) == np.float64:
        kw.setdefault("openvino", "none")
        kw.setdefault("why", "OpenVINO's CPU plugin computes f64 in f32; the oracle judges")
    return Case(cid, op, "opset7", inputs, oracle=lambda d, a, s=None: oracle(d, a, s), ulps=2,
                atol=magnitude_atol(data, data.dtype, scale), **kw)


def _cases(op):
    out = []
    for dtype in FLOATS:
        name = np.dtype(dtype).name
        for k, shape in enumerate(harness.shapes(rng, ranks=(1, 2, 3, 4), max_dim=4)):
            rank = len(shape)
            data = _complex_values((*shape, 2), dtype, edges=(k == 2))
            axes = harness.random_axes(rng, rank)
            out.append(_case(f"{op}-{name}-{k}", op, data, axes))
            sizes = [int(rng.choice([-1, 0, 1, 2, 3, 5])) if shape[a % rank] else int(rng.choice([-1, 2]))
                     for a in axes]
            if 0 in sizes and dtype is not np.float64:
                sizes = [s if s else 2 for s in sizes]
            out.append(_case(f"{op}-{name}-{k}-sizes", op, data, axes, sizes, index=np.int32 if k % 2 else np.int64))
    x = _complex_values((2, 3, 4, 2), np.float32)
    out += [
        _case(f"{op}-all-axes-negative", op, x, [-3, -2, -1]),
        _case(f"{op}-unsorted", op, x, [2, 0], [5, -1]),
        _case(f"{op}-no-axes", op, x, [], openvino="none", why="an empty axes list; the oracle judges"),
        _case(f"{op}-size-zero", op, x, [1], [0], openvino="none", why="a signal size of 0; the oracle judges"),
        _case(f"{op}-pad-empty-axis", op, _complex_values((2, 0, 2), np.float32), [1], [3],
              openvino="none", why="a size-0 axis padded; the oracle judges"),
        _case(f"{op}-runtime-axes", op, x, [1, -1], [2, 6], const=False, openvino="none",
              why="axes and signal_size fed at run time; the oracle judges"),
        _case(f"{op}-power-of-two", op, _complex_values((3, 8, 2), np.float32), [1]),
        _case(f"{op}-long", op, _complex_values((1, 12, 2), np.float32, edges=False), [-1], [16]),
    ]
    return out


def _errors(op):
    def err(cid, data, axes, label, sizes=None, axes_type=np.int64, sizes_type=np.int64):
        inputs = [Input("data", data), Input("axes", np.array(axes, axes_type), const=True)]
        if sizes is not None:
            inputs.append(Input("signal_size", np.array(sizes, sizes_type), const=True))
        return Case(f"{op}-err-{cid}", op, "opset7", inputs, error=label)
    x = np.zeros((2, 3, 2), np.float32)
    return [
        err("pair", np.zeros((2, 3, 3), np.float32), [0], "complex-shape"),
        err("rank", np.zeros((2,), np.float32), [0], "data-rank"),
        err("pair-axis", x, [2], "axis-range"),
        err("minus-one-past", x, [-3], "axis-range"),
        err("repeat", x, [0, -2], "axes-unique"),
        err("count", x, [0, 1, 0], "axes-count"),
        err("axes-2d", x, [[0]], "axes-vector"),
        err("axes-float", x, [0], "axes-type", axes_type=np.float32),
        err("axes-u8", x, [0], "axes-type", axes_type=np.uint8),
        err("sizes-length", x, [0], "signal-size-shape", sizes=[2, 2]),
        err("sizes-2d", x, [0], "signal-size-shape", sizes=[[2]]),
        err("sizes-value", x, [0], "signal-size-value", sizes=[-2]),
        err("sizes-type", x, [0], "signal-size-type", sizes=[2], sizes_type=np.float32),
        err("int-data", np.zeros((2, 3, 2), np.int32), [0], "float-type"),
        err("huge", x, [0, 1], "tensor-limit", sizes=[2**20, 2**20]),
    ]


DFT_CASES = _cases("DFT") + _errors("DFT")
IDFT_CASES = _cases("IDFT") + _errors("IDFT")


@pytest.mark.parametrize("case", DFT_CASES, ids=str)
def test_dft(case):
    harness.check(case, DFT_CASES)


@pytest.mark.parametrize("case", IDFT_CASES, ids=str)
def test_idft(case):
    harness.check(case, IDFT_CASES)
