"""ExtractImagePatches-3 against OpenVINO's CPU plugin and `oracles.spatial.extract_image_patches`.

Exact (a gather with zero padding). Every auto_pad value, patch sizes 1 to 4 (and 0), strides
and rates 1 to 3 in each direction, patches larger than the image, a size-0 image, the spec's
five examples, every element type class with edge values, and the refusals: data rank other
than 4, sizes/strides/rates without two values, strides or rates below 1, negative sizes, an
unknown auto_pad.
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.spatial import extract_image_patches

TYPES = element_dtypes("f32", "f16", "bf16", "f64", "i8", "u8", "i32", "i64", "u16", "boolean")
# The CPU plugin narrows i64 to i32 and f64 to f32 (and past f32's range to its largest value),
# and OpenVINO's core reference does not evaluate ExtractImagePatches on i64 or f64.
JUDGE = {"i64": {"openvino": "none", "why": "the CPU plugin computes i64 in i32, the reference lacks i64"},
         "f64": {"openvino": "none", "why": "the CPU plugin computes f64 in f32, the reference lacks f64"}}
PADS = ("valid", "same_upper", "same_lower")


def _case(name, x, sizes, strides, rates, auto_pad, **extra):
    attrs = {"sizes": sizes, "strides": strides, "rates": rates, "auto_pad": auto_pad}
    return Case(name, "ExtractImagePatches", "opset3", [Input("data", x)], attrs,
                oracle=lambda a: extract_image_patches(a, sizes, strides, rates, auto_pad), **extra)


def _cases():
    rng = np.random.default_rng(26)
    cases = []
    for k, (tag, dtype) in enumerate(TYPES.items()):
        for auto_pad in PADS:
            shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(3, 8)), int(rng.integers(3, 8)))
            sizes = [int(v) for v in rng.integers(1, 4, 2)]
            strides = [int(v) for v in rng.integers(1, 4, 2)]
            rates = [int(v) for v in rng.integers(1, 3, 2)]
            x = harness.values(rng, shape, dtype, edges=True)
            name = f"eip-{tag}-{auto_pad}-k{sizes[0]}{sizes[1]}-s{strides[0]}{strides[1]}-r{rates[0]}{rates[1]}"
            cases.append(_case(name, x, sizes, strides, rates, auto_pad, **JUDGE.get(tag, {})))
    image = np.arange(1, 101, dtype=np.float32).reshape(1, 1, 10, 10)
    for n, (sizes, strides, rates, auto_pad) in enumerate([([3, 3], [5, 5], [1, 1], "valid"),
                                                            ([4, 4], [8, 8], [1, 1], "valid"),
                                                            ([4, 4], [9, 9], [1, 1], "same_upper"),
                                                            ([3, 3], [5, 5], [2, 2], "valid"),
                                                            ([4, 4], [9, 9], [1, 1], "same_lower"),
                                                            ([2, 3], [3, 2], [3, 1], "same_lower")]):
        cases.append(_case(f"eip-spec-{n + 1}" if n < 4 else f"eip-image-{n + 1}", image, sizes, strides, rates,
                           auto_pad))
    two = np.arange(1, 51, dtype=np.float32).reshape(1, 2, 5, 5)
    cases.append(_case("eip-spec-5", two, [2, 2], [3, 3], [1, 1], "valid"))
    small = harness.values(rng, (1, 2, 3, 4), np.float32)
    for auto_pad in PADS:
        cases.append(_case(f"eip-larger-than-image-{auto_pad}", small, [4, 3], [2, 1], [2, 2], auto_pad))
        cases.append(_case(f"eip-empty-image-{auto_pad}", np.zeros((1, 2, 0, 4), np.float32), [2, 2], [1, 1],
                           [1, 1], auto_pad))
    cases.append(_case("eip-size-zero", small, [0, 2], [1, 1], [1, 1], "valid", openvino="none",
                       why="the CPU plugin has no output memory for 0 channels"))
    f = np.ones((1, 1, 4, 4), np.float32)
    ok = {"sizes": [2, 2], "strides": [1, 1], "rates": [1, 1], "auto_pad": "valid"}
    for name, x, change, label in [
        ("rank", np.ones((1, 4, 4), np.float32), {}, "data-rank"),
        ("sizes-count", f, {"sizes": [2]}, "patch-attribute"),
        ("strides-count", f, {"strides": [1, 1, 1]}, "patch-attribute"),
        ("rates-count", f, {"rates": []}, "patch-attribute"),
        ("stride-zero", f, {"strides": [1, 0]}, "patch-attribute"),
        ("rate-zero", f, {"rates": [0, 1]}, "patch-attribute"),
        ("size-negative", f, {"sizes": [-1, 2]}, "patch-attribute"),
        ("auto-pad", f, {"auto_pad": "explicit"}, "attributes"),
    ]:
        cases.append(Case(f"eip-refuses-{name}", "ExtractImagePatches", "opset3", [Input("data", x)],
                          {**ok, **change}, error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_extract_image_patches(case):
    harness.check(case, CASES)


# The outputs the spec page prints for its five examples, one row per output channel.
SPEC = [
    (10, 1, ([3, 3], [5, 5], [1, 1], "valid"),
     [[1, 6, 51, 56], [2, 7, 52, 57], [3, 8, 53, 58], [11, 16, 61, 66], [12, 17, 62, 67], [13, 18, 63, 68],
      [21, 26, 71, 76], [22, 27, 72, 77], [23, 28, 73, 78]]),
    (10, 1, ([4, 4], [8, 8], [1, 1], "valid"), [[v] for v in (1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24, 31, 32, 33, 34)]),
    (10, 1, ([4, 4], [9, 9], [1, 1], "same_upper"),
     [[0, 0, 0, 89], [0, 0, 81, 90], [0, 0, 82, 0], [0, 0, 83, 0], [0, 9, 0, 99], [1, 10, 91, 100], [2, 0, 92, 0],
      [3, 0, 93, 0], [0, 19, 0, 0], [11, 20, 0, 0], [12, 0, 0, 0], [13, 0, 0, 0], [0, 29, 0, 0], [21, 30, 0, 0],
      [22, 0, 0, 0], [23, 0, 0, 0]]),
    (10, 1, ([3, 3], [5, 5], [2, 2], "valid"),
     [[1, 6, 51, 56], [3, 8, 53, 58], [5, 10, 55, 60], [21, 26, 71, 76], [23, 28, 73, 78], [25, 30, 75, 80],
      [41, 46, 91, 96], [43, 48, 93, 98], [45, 50, 95, 100]]),
    (5, 2, ([2, 2], [3, 3], [1, 1], "valid"),
     [[1, 4, 16, 19], [26, 29, 41, 44], [2, 5, 17, 20], [27, 30, 42, 45], [6, 9, 21, 24], [31, 34, 46, 49],
      [7, 10, 22, 25], [32, 35, 47, 50]]),
]


@pytest.mark.parametrize("side, channels, attrs, printed", SPEC, ids=[f"example-{n + 1}" for n in range(len(SPEC))])
def test_extract_image_patches_spec_examples(side, channels, attrs, printed):
    image = np.arange(1, side * side * channels + 1, dtype=np.float32).reshape(1, channels, side, side)
    sizes, strides, rates, auto_pad = attrs
    case = _case("spec", image, sizes, strides, rates, auto_pad)
    (got,) = harness.run_irscatter(case)
    assert got.reshape(len(printed), -1).tolist() == printed
