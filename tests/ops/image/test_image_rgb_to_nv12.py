"""RGBtoNV12-17 and BGRtoNV12-17 against `oracles.image`.

Tolerance: exact. The spec fixes the per-pixel formulas and the clipping; OpenVINO's reference
fixes the rest (f32 arithmetic, u8 halves rounded away from zero, U and V of a 2x2 block the
mean of its four pixels' clipped values), and the oracle computes the same way.

OpenVINO is not the judge of any case: the installed OpenVINO (2026.4) has no opset17 op of
either type, so the oracle alone is.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.image import nv12_to_rgb, rgb_to_nv12

TYPES = element_dtypes("u8", "f32", "f16", "bf16", "f64")
WHY = "OpenVINO 2026.4 has no RGBtoNV12-17 or BGRtoNV12-17"


def _case(op, tag, image, single_plane, note=""):
    bgr = op == "BGRtoNV12"
    shape = "x".join(map(str, image.shape))
    return Case(f"{op}-{tag}-{shape}-{'single' if single_plane else 'planes'}{note}", op, "opset17",
                [Input("image", image)], {"single_plane": single_plane},
                oracle=lambda a: rgb_to_nv12(a, bgr=bgr, single_plane=single_plane), openvino="none", why=WHY)


def _cases():
    rng = np.random.default_rng(17)
    cases = []
    sizes = [(1, 2, 2), (2, 4, 6), (1, 6, 4), (3, 2, 8), (0, 4, 4), (2, 0, 4), (1, 4, 0)]
    for op in ("RGBtoNV12", "BGRtoNV12"):
        for tag, dtype in TYPES.items():
            for k, (n, height, width) in enumerate(sizes):
                if tag != "f32" and k >= 4:
                    continue  # the size-0 images once per op
                for single_plane in (True, False):
                    if dtype == np.uint8:
                        image = harness.values(rng, (n, height, width, 3), dtype, low=0, high=255, edges=True)
                    else:
                        image = harness.values(rng, (n, height, width, 3), dtype, low=-40, high=300, edges=k % 2 == 1)
                    cases.append(_case(op, tag, image, single_plane, "-edges" if k % 2 else ""))
        cases.append(_case(op, "u8", rng.integers(0, 256, (2, 16, 32, 3)).astype(np.uint8), True, "-large"))
    # the extremes of every channel: clipping of U and V, rounding of the means
    corners = np.array([[r, g, b] for r in (0, 255) for g in (0, 255) for b in (0, 255)], np.uint8)
    cases.append(_case("RGBtoNV12", "u8", corners.reshape(1, 2, 4, 3), False, "-corners"))
    cases.append(_case("BGRtoNV12", "f32", corners.reshape(1, 4, 2, 3).astype(np.float32), True, "-corners"))
    cases += _refusals()
    return cases


def _refusals():
    def z(*shape, dtype=np.float32):
        return np.zeros(shape, dtype)

    out = []
    for name, op, image, label in (
            ("i32", "RGBtoNV12", z(1, 2, 2, 3, dtype=np.int32), "image-type"),
            ("bool", "BGRtoNV12", z(1, 2, 2, 3, dtype=np.bool_), "image-type"),
            ("rank3", "RGBtoNV12", z(2, 2, 3), "image-rank"),
            ("rank5", "BGRtoNV12", z(1, 1, 2, 2, 3), "image-rank"),
            ("channels", "RGBtoNV12", z(1, 2, 2, 4), "image-channels"),
            ("odd-height", "RGBtoNV12", z(1, 3, 2, 3), "image-height"),
            ("odd-width", "BGRtoNV12", z(1, 2, 5, 3), "image-width")):
        for single_plane in (True, False):
            out.append(Case(f"{op}-{name}-{single_plane}", op, "opset17", [Input("image", image)],
                            {"single_plane": single_plane}, error=label))
    out.append(Case("RGBtoNV12-single-plane-text", "RGBtoNV12", "opset17", [Input("image", z(1, 2, 2, 3))],
                    {"single_plane": "maybe"}, error="attributes"))
    return out


CASES = _cases()
assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_image_rgb_to_nv12(case):
    harness.check(case, CASES)


def test_image_nv12_round_trip():
    """RGB -> NV12 -> RGB, through the two ops in one model, comes back within the loss of the
    chroma subsampling (a flat 2x2 block loses nothing but rounding) and matches the oracles."""
    from irscatter.ops import registry
    from irscatter.ops.functional import call

    rng = np.random.default_rng(3)
    flat = np.repeat(np.repeat(rng.integers(20, 236, (1, 4, 5, 3)), 2, axis=1), 2, axis=2).astype(np.float32)
    nv12 = call(registry.find("RGBtoNV12", "opset17"), [flat], {"single_plane": True})
    back = call(registry.find("NV12toRGB", "opset8"), [nv12], {})
    np.testing.assert_array_equal(nv12, rgb_to_nv12(flat))
    np.testing.assert_array_equal(back, nv12_to_rgb(nv12))
    assert np.abs(back - flat).max() < 1.5
