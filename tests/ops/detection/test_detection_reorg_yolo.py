"""ReorgYolo-2 against OpenVINO's CPU plugin and the oracle: strides 1, 2 and 3 (also written as
OpenVINO's "2,2" list), the spec's example at a smaller size, channel counts that are and are
not multiples of stride^2 (the reference's flat index mapping), batches, size-0 dimensions,
and every element type with edge values. Exact: the op moves elements.

The CPU plugin computes ReorgYolo in f32 and OpenVINO's core reference has none, so 32- and
64-bit integers and f64 are compared with the plugin on values f32 holds, and their edge values
(integer extremes, f64 values f32 rounds) with the oracle alone.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import detection_priors as oracle

TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
         np.uint16, np.uint32, np.uint64, np.bool_]
WIDE = ("the CPU plugin computes ReorgYolo in f32, which cannot hold every 32- or 64-bit integer or f64 value, "
        "and OpenVINO's core reference has no ReorgYolo kernel")


def _case(cid, data, stride, text=None, **kw):
    return Case(cid, "ReorgYolo", "opset2", [Input("data", data)], {"stride": text or str(stride)},
                oracle=lambda d: oracle.reorg_yolo(d, stride=stride), **kw)


def _cases():
    rng = np.random.default_rng(14)
    out = [_case("reorg-spec", harness.values(rng, (1, 8, 6, 6), np.float32), 2)]
    for stride, shape in ((1, (2, 3, 2, 3)), (2, (2, 4, 4, 6)), (2, (1, 12, 2, 4)), (3, (2, 9, 3, 6)),
                          (3, (1, 18, 6, 3))):
        out.append(_case(f"reorg-s{stride}-{'x'.join(map(str, shape))}", harness.values(rng, shape, np.float32),
                         stride))
    out.append(_case("reorg-list", harness.values(rng, (1, 8, 2, 4), np.float32), 2, "2,2"))
    # channels not a multiple of stride^2: the reference's flat mapping, within the data
    for stride, shape in ((2, (1, 5, 2, 2)), (2, (1, 7, 4, 2)), (2, (1, 6, 4, 4)), (3, (1, 10, 3, 3))):
        out.append(_case(f"reorg-flat-s{stride}-{'x'.join(map(str, shape))}", harness.values(rng, shape, np.float32),
                         stride))
    for dtype in TYPES:
        name = np.dtype(dtype).name
        values = harness.values(rng, (2, 8, 2, 4), dtype, edges=True)
        if np.dtype(dtype).itemsize >= 4 and np.dtype(dtype).kind in "iu" or dtype == np.float64:
            out.append(_case(f"reorg-{name}-edges", values, 2, openvino="none", why=WIDE))
            values = harness.values(rng, (2, 8, 2, 4), dtype).astype(np.float32).astype(dtype)
        out.append(_case(f"reorg-{name}", values, 2))
    for shape in ((0, 4, 2, 2), (1, 4, 0, 2), (2, 8, 2, 0)):
        out.append(_case(f"reorg-empty-{'x'.join(map(str, shape))}", np.zeros(shape, np.float32), 2))
    return out


def _error(cid, label, shape, stride="2"):
    return Case(cid, "ReorgYolo", "opset2", [Input("data", np.zeros(shape, np.float32))], {"stride": stride},
                error=label)


ERRORS = [
    _error("reorg-err-rank", "data-rank", (4, 2, 2)),
    _error("reorg-err-stride-zero", "reorg-stride", (1, 4, 2, 2), "0"),
    _error("reorg-err-stride-mixed", "reorg-stride", (1, 4, 2, 2), "2,3"),
    _error("reorg-err-stride-empty", "reorg-stride", (1, 4, 2, 2), ""),
    _error("reorg-err-channels", "reorg-channels", (1, 3, 2, 2)),
    _error("reorg-err-height", "reorg-divisible", (1, 4, 3, 2)),
    _error("reorg-err-width", "reorg-divisible", (1, 4, 2, 5)),
]

CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_reorg_yolo(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_reorg_yolo_refused(case):
    harness.check(case, ERRORS)
