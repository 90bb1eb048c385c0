"""NV12toRGB-8, NV12toBGR-8, I420toRGB-8 and I420toBGR-8 against OpenVINO and `oracles.image`.

Tolerance: exact. The spec fixes the formulas and the clipping; OpenVINO's reference fixes the
rest (f32 arithmetic, u8 halves rounded away from zero), and the oracle computes the same way.

Where the CPU plugin is not the judge:
  * u8 results that fall on a half (166.5): the plugin rounds them to even (166), OpenVINO's
    reference away from zero (167), as irscatter does.
  * NaN inputs: the plugin's clip turns NaN into 0, the reference's keeps NaN, as irscatter does.
  Such cases are judged by the oracle alone: OpenVINO 2026.4's core cannot evaluate these ops
  (the reference kernel is only reachable through the template plugin, which is not installed).
  * f64: the plugin and the reference compute it in f32; irscatter computes f64 in f64 with
    the spec's decimal constants, judged by the oracle alone.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.image import i420_to_rgb, nv12_to_rgb

TYPES = element_dtypes("u8", "f32", "f16", "bf16", "f64")
OPS = {"NV12toRGB": (nv12_to_rgb, False), "NV12toBGR": (nv12_to_rgb, True),
       "I420toRGB": (i420_to_rgb, False), "I420toBGR": (i420_to_rgb, True)}


def _values(rng, shape, dtype, edges):
    if np.dtype(dtype) == np.uint8:
        return harness.values(rng, shape, dtype, low=0, high=255, edges=True)
    return harness.values(rng, shape, dtype, low=-40, high=300, edges=edges)


def _planes(rng, op, n, height, width, dtype, single, edges=False):
    """The frame as one plane or as its planes; `edges` puts NaN, infinities, -0.0 in float planes."""
    if single:
        return [Input("y", _values(rng, (n, height * 3 // 2, width, 1), dtype, edges))]
    y = Input("y", _values(rng, (n, height, width, 1), dtype, edges))
    if op.startswith("NV12"):
        return [y, Input("uv", _values(rng, (n, height // 2, width // 2, 2), dtype, edges))]
    return [y, Input("u", _values(rng, (n, height // 2, width // 2, 1), dtype, edges)),
            Input("v", _values(rng, (n, height // 2, width // 2, 1), dtype, edges))]


def _judge(op, tag, inputs):
    """Which OpenVINO answer the case is compared with (see the module doc)."""
    if tag == "f64":
        return {"openvino": "none", "why": "OpenVINO computes f64 in f32"}
    arrays = [i.value for i in inputs]
    if tag != "u8":
        if any(np.isnan(a.astype(np.float32)).any() for a in arrays):
            return {"openvino": "none", "why": "the plugin clips NaN to 0"}
        return {}
    oracle, bgr = OPS[op]
    exact = oracle(*(a.astype(np.float32) for a in arrays), bgr=bgr).astype(np.float64)
    if (np.abs(exact - np.floor(exact) - 0.5) == 0).any():
        return {"openvino": "none", "why": "the plugin rounds u8 halves to even"}
    return {}


def _case(op, tag, inputs, note="", **judge):
    oracle, bgr = OPS[op]
    shapes = "-".join("x".join(map(str, i.value.shape)) for i in inputs)
    return Case(f"{op}-{tag}-{shapes}{note}", op, "opset8", inputs, oracle=lambda *a: oracle(*a, bgr=bgr),
                **(judge or _judge(op, tag, inputs)))


def _cases():
    rng = np.random.default_rng(8)
    cases = []
    sizes = [(1, 2, 2), (2, 4, 6), (1, 6, 4), (3, 2, 8), (1, 8, 10), (0, 4, 4), (2, 0, 4), (1, 4, 0)]
    for op in OPS:
        for tag, dtype in TYPES.items():
            for k, (n, height, width) in enumerate(sizes):
                if tag != "f32" and k >= 5:
                    continue  # the size-0 frames once per op
                for single in (True, False):
                    edges = k % 2 == 1
                    cases.append(_case(op, tag, _planes(rng, op, n, height, width, dtype, single, edges),
                                       "-edges" if edges else ""))
        # a larger frame, whose rows the plugin's vector code takes in blocks
        cases.append(_case(op, "u8", _planes(rng, op, 2, 16, 64, np.uint8, True)))
        cases.append(_case(op, "f32", _planes(rng, op, 1, 16, 64, np.float32, False)))
    # every Y with neutral chroma, and the chroma extremes: clipping at both ends
    y = np.arange(256, dtype=np.uint8).reshape(1, 16, 16, 1)
    for uv in (128, 0, 255):
        cases.append(_case("NV12toRGB", "u8", [Input("y", y), Input("uv", np.full((1, 8, 8, 2), uv, np.uint8))],
                           f"-every-y-uv{uv}"))
    # a known half: Y=141, U=V=128 gives 1.164 * 125 = 145.5 exactly, rounded up to 146
    frame = np.array([141, 141, 141, 141, 128, 128], np.uint8).reshape(1, 3, 2, 1)
    cases.append(Case("NV12toRGB-u8-half", "NV12toRGB", "opset8", [Input("y", frame)],
                       oracle=lambda a: np.full((1, 2, 2, 3), 146, np.uint8),
                       openvino="none", why="the plugin rounds u8 halves to even"))
    # infinities clip to 0 and 255
    frame = np.array([np.inf, -np.inf, 16, 16, 128, 128], np.float32).reshape(1, 3, 2, 1)
    cases.append(_case("NV12toRGB", "f32", [Input("y", frame)], "-inf"))
    # planes as Consts (folded while the model is compiled)
    planes = [("y", (1, 4, 4, 1)), ("u", (1, 2, 2, 1)), ("v", (1, 2, 2, 1))]
    inputs = [Input(name, harness.values(rng, shape, np.float32, low=0, high=255), const=True) for name, shape in planes]
    cases.append(_case("I420toRGB", "f32", inputs, "-const"))
    cases += _refusals()
    return cases


def _refusals():
    f32, u8 = np.float32, np.uint8

    def z(*shape, dtype=f32):
        return np.zeros(shape, dtype)

    out = []
    for name, op, arrays, label in (
            ("i32", "NV12toRGB", [z(1, 6, 4, 1, dtype=np.int32)], "image-type"),
            ("i8-planes", "I420toBGR", [z(1, 4, 4, 1, dtype=np.int8)] + [z(1, 2, 2, 1, dtype=np.int8)] * 2,
             "image-type"),
            ("types", "NV12toRGB", [z(1, 4, 4, 1), z(1, 2, 2, 2, dtype=u8)], "same-element-type"),
            ("types", "I420toRGB", [z(1, 4, 4, 1), z(1, 2, 2, 1), z(1, 2, 2, 1, dtype=np.float16)],
             "same-element-type"),
            ("rank3", "NV12toBGR", [z(6, 4, 1)], "image-rank"),
            ("uv-rank3", "NV12toRGB", [z(1, 4, 4, 1), z(2, 2, 2)], "image-rank"),
            ("y-channels", "NV12toRGB", [z(1, 6, 4, 2)], "image-channels"),
            ("uv-channels", "NV12toRGB", [z(1, 4, 4, 1), z(1, 2, 2, 1)], "image-channels"),
            ("u-channels", "I420toRGB", [z(1, 4, 4, 1), z(1, 2, 2, 2), z(1, 2, 2, 1)], "image-channels"),
            ("uv-height", "NV12toRGB", [z(1, 4, 4, 1), z(1, 1, 2, 2)], "image-planes"),
            ("uv-batch", "NV12toBGR", [z(1, 4, 4, 1), z(2, 2, 2, 2)], "image-planes"),
            ("v-width", "I420toRGB", [z(1, 4, 4, 1), z(1, 2, 2, 1), z(1, 2, 3, 1)], "image-planes"),
            ("odd-y", "I420toBGR", [z(1, 3, 4, 1), z(1, 2, 2, 1), z(1, 2, 2, 1)], "image-planes"),
            ("height-3", "NV12toRGB", [z(1, 4, 4, 1)], "image-height"),
            ("height-3", "I420toRGB", [z(1, 8, 4, 1)], "image-height"),
            ("width", "NV12toRGB", [z(1, 6, 3, 1)], "image-width"),
            ("width", "I420toBGR", [z(1, 6, 5, 1)], "image-width"),
            ("two-inputs", "I420toRGB", [z(1, 4, 4, 1), z(1, 2, 2, 1)], "input-count")):
        out.append(Case(f"{op}-{name}", op, "opset8", [Input(f"in{k}", a) for k, a in enumerate(arrays)],
                        error=label))
    return out


CASES = _cases()
assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_image_yuv_to_rgb(case):
    harness.check(case, CASES)
