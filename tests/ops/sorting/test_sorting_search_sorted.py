"""SearchSorted-15 against OpenVINO's CPU plugin and the oracle: both modes, a 1-D sequence with
values of ranks 0 to 4, batched sequences of ranks 2 to 4 with their rows of values, size-0
dimensions (an empty sequence gives 0s), every float and integer type, values repeating the
entries, infinities, -0.0 and NaN (0 in both modes, as OpenVINO gives). Exact.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles import sorting as oracle

TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
         np.uint16, np.uint32, np.uint64]


def _case(cid, seq, values, *, right=False, **kw):
    return Case(cid, "SearchSorted", "opset15", [Input("sorted_sequence", seq), Input("values", values)],
                {"right_mode": right}, oracle=lambda s, v: oracle.search_sorted(s, v, right_mode=right), **kw)


def _draw(rng, shape, dtype):
    low = 0 if np.dtype(dtype).kind == "u" else -4
    return harness.values(rng, shape, np.int32, low=low, high=5).astype(dtype)


def _cases():
    rng = np.random.default_rng(15)
    out = []
    n = 0
    for rank in (1, 2, 3, 4):
        for width in (0, 1, 5):
            for dtype in TYPES:
                n += 1
                lead = tuple(int(d) for d in rng.integers(0 if n % 7 == 0 else 1, 4, rank - 1))
                seq = np.sort(_draw(rng, lead + (width,), dtype), axis=-1)
                if rank == 1:
                    vshape = tuple(int(d) for d in rng.integers(1, 4, int(rng.integers(0, 5))))
                else:
                    vshape = lead + (int(rng.integers(0, 4)),)
                values = _draw(rng, vshape, dtype)
                right = bool(n % 2)
                kw = {}
                if width == 0:
                    kw = dict(openvino="none", why="the CPU plugin leaves its output unwritten (garbage) when the "
                              "sequence's rows are empty; the spec's insertion index is 0")
                out.append(_case(f"ss-{np.dtype(dtype).name}-{'x'.join(map(str, seq.shape))}-"
                                 f"{'x'.join(map(str, vshape)) or 'scalar'}-{'right' if right else 'left'}",
                                 seq, values, right=right, **kw))
    seq = np.array([-np.inf, -1.0, -0.0, 0.0, 2.0, 2.0, np.inf], np.float32)
    values = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, 2.0, 1.5, -5.0], np.float32)
    for right in (True, False):
        out.append(_case(f"ss-edges-{right}", seq, values, right=right))
        out.append(_case(f"ss-edges-batched-{right}", np.stack([seq, np.ones_like(seq)]),
                         np.stack([values, values]), right=right))
    return out


def _errors():
    f = np.zeros((2, 3), np.float32)

    def err(cid, seq, values, label):
        return Case(cid, "SearchSorted", "opset15", [Input("sorted_sequence", seq), Input("values", values)],
                    error=label)
    return [
        err("ss-err-scalar-seq", np.array(1.0, np.float32), f, "search-sorted-rank"),
        err("ss-err-scalar-values", f, np.array(1.0, np.float32), "search-sorted-rank"),
        err("ss-err-rank", f, np.zeros((2, 3, 1), np.float32), "search-sorted-shape"),
        err("ss-err-dims", f, np.zeros((3, 3), np.float32), "search-sorted-shape"),
        err("ss-err-types", f, np.zeros((2, 3), np.int32), "same-element-type"),
        err("ss-err-bool", f > 0, f > 0, "numeric-type"),
    ]


CASES = _cases()
ERRORS = _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_search_sorted(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_search_sorted_refused(case):
    harness.check(case, ERRORS)
