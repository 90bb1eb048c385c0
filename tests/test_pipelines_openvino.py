"""Front ends as converters emit them around a backbone, built with OpenVINO's Python API and
compared with its CPU plugin (out of process): a camera pipeline (NV12 planes -> RGB ->
layout change -> Interpolate -> normalization) and two audio front ends (STFT or framed RDFT ->
magnitude -> mel filter bank MatMul -> Log). Sizes, interpolation modes and seeds vary by case.

Tolerance: the image pipeline is a few f32 operations per element (rtol and atol 1e-5 on values
of order 1). The audio front ends sum products over
a frame of up to 256 samples of order 1 twice (transform, then mel), so they are compared with
an absolute tolerance scaled to those sums (1e-4 of the largest magnitude) rather than in ulps.
"""

import numpy as np
import pytest
from helpers import run_ov, save_ov

import irscatter

ov = pytest.importorskip("openvino")
import openvino.opset8 as o8  # noqa: E402
import openvino.opset11 as o11  # noqa: E402
import openvino.opset15 as ops  # noqa: E402


def C(v, dtype=np.float32):
    return ops.constant(np.array(v, dtype))


def camera(rng):
    h, w = (2 * int(v) for v in rng.integers(2, 17, 2))
    y = ops.parameter([1, h, w, 1], ov.Type.u8, name="y")
    uv = ops.parameter([1, h // 2, w // 2, 2], ov.Type.u8, name="uv")
    # the planes become f32 before the colour conversion, as OpenVINO's pre-processing orders it:
    # a u8 conversion rounds halves, and the CPU plugin rounds them to even where the spec's
    # reference rounds away from zero (a documented departure, tested with the op)
    y32, uv32 = ops.convert(y, "f32"), ops.convert(uv, "f32")
    rgb = o8.nv12_to_rgb(y32, uv32) if rng.random() < 0.5 else o8.nv12_to_bgr(y32, uv32)
    nchw = ops.transpose(rgb, C([0, 3, 1, 2], np.int64))
    size = [int(v) for v in rng.integers(3, 40, 2)]
    mode = str(rng.choice(["nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow"]))
    transform = "half_pixel" if "pillow" in mode else str(rng.choice(["half_pixel", "asymmetric", "align_corners"]))
    # Pillow's bicubic is a = -0.5; the spec's default cube_coeff is -0.75, and a converter sets
    # -0.5 (OpenVINO's CPU plugin uses -0.5 whatever the attribute says)
    resized = o11.interpolate(nchw, C(size, np.int64), mode, "sizes", coordinate_transformation_mode=transform,
                              cube_coeff=-0.5 if mode == "bicubic_pillow" else -0.75, axes=C([2, 3], np.int64))
    mean, std = C(np.array([123.7, 116.3, 103.5]).reshape(1, 3, 1, 1)), C(np.array([58.4, 57.1, 57.4]).reshape(1, 3, 1, 1))
    out = ops.divide(ops.subtract(resized, mean), std)
    feeds = {"y": rng.integers(0, 256, (1, h, w, 1), dtype=np.uint8),
             "uv": rng.integers(0, 256, (1, h // 2, w // 2, 2), dtype=np.uint8)}
    return [out], [y, uv], feeds, dict(rtol=1e-5, atol=1e-5)


def _mel(rng, bins: int, mels: int) -> np.ndarray:
    """A non-negative filter bank [bins, mels] (its shape, not its exact values, is what matters)."""
    return np.abs(rng.standard_normal((bins, mels))).astype(np.float32) / bins


def _magnitude(complex_last):
    squares = ops.multiply(complex_last, complex_last)
    return ops.sqrt(ops.reduce_sum(squares, C([-1], np.int64), keep_dims=False))


def audio_stft(rng):
    frame = int(rng.choice([32, 64, 128, 256]))
    step = frame // int(rng.choice([1, 2, 4]))
    n = frame + step * int(rng.integers(0, 12))
    signal = ops.parameter([2, n], ov.Type.f32, name="signal")
    window = C(np.hanning(frame))
    spectrum = ops.stft(signal, window, C(frame, np.int64), C(step, np.int64), transpose_frames=False)
    mels = int(rng.integers(8, 40))
    energy = ops.matmul(_magnitude(spectrum), C(_mel(rng, frame // 2 + 1, mels)), False, False)
    out = ops.log(ops.add(energy, C(1e-6)))
    return [out], [signal], {"signal": rng.standard_normal((2, n)).astype(np.float32)}, dict(scaled=1e-4)


def audio_rdft(rng):
    frames, frame = int(rng.integers(1, 20)), int(rng.choice([16, 50, 64, 100]))
    signal = ops.parameter([frames, frame], ov.Type.f32, name="frames")
    windowed = ops.multiply(signal, C(np.hamming(frame)))
    spectrum = o8.rdft(windowed, C([1], np.int64)) if hasattr(o8, "rdft") else ops.rdft(windowed, C([1], np.int64))
    mels = int(rng.integers(8, 40))
    energy = ops.matmul(_magnitude(spectrum), C(_mel(rng, frame // 2 + 1, mels)), False, False)
    out = ops.log(ops.add(energy, C(1e-6)))
    return [out], [signal], {"frames": rng.standard_normal((frames, frame)).astype(np.float32)}, dict(scaled=1e-4)


TEMPLATES = [camera, audio_stft, audio_rdft]


@pytest.mark.parametrize("i", range(24))
def test_front_end_matches_openvino(tmp_path, i):
    template = TEMPLATES[i % len(TEMPLATES)]
    outputs, params, feeds, tol = template(np.random.default_rng(17000 + i))
    xml = save_ov(ov.Model([ops.result(o) for o in outputs], params, template.__name__), tmp_path)
    model = irscatter.read_model(xml)
    assert model.compile().findings == []
    got = list(model.run(feeds).values())
    want = run_ov(xml, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        if "scaled" in tol:
            np.testing.assert_allclose(g, w, rtol=0, atol=tol["scaled"] * max(1.0, float(np.abs(w).max())))
        else:
            np.testing.assert_allclose(g, w, **tol)
