"""Range-1 against OpenVINO's CPU plugin (and core reference) and a per-element oracle.

Inputs of one numeric type T (f32, f16, bf16, f64, i8..i64, u8..u64) give a T output;
positive and negative steps, empty ranges, fractional steps; exact for integers, 1 ulp for
floats (start + i * step rounds twice in f32). Errors: mixed types, boolean, non-scalars
(shape [1] too, which Range-4 takes), step 0.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input, named_inputs


def _oracle(start, stop, step):
    """val[i] = start + i * step while it stays on start's side of stop (f32 for narrow floats)."""
    dtype = start.dtype
    work = np.float64 if dtype == np.float64 else np.float32 if dtype.kind in "fV" else None
    s, e, d = (v.item() if work is None else float(v.astype(np.float32 if work is np.float32 else np.float64))
               for v in (start, stop, step))
    out, i = [], 0
    while True:
        v = s + i * d if work is None else work(work(s) + work(i) * work(d))
        if (d > 0 and s + i * d >= e) or (d < 0 and s + i * d <= e):
            break
        out.append(v)
        i += 1
    return np.array(out, dtype=np.float64 if work is not None else np.int64).astype(dtype) if out else \
        np.zeros(0, dtype)


BOUNDS = [(2, 23, 3), (23, 2, -3), (0, 5, 1), (5, 5, 1), (5, 0, 1), (-4, 4, 2), (0, 1, 0.25), (1.5, -2.5, -0.5),
          (0.1, 1.0, 0.3)]
TYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
         np.uint16, np.uint32, np.uint64]


def _cases():
    out = []
    for dtype in TYPES:
        for k, (a, b, c) in enumerate(BOUNDS):
            integral = np.dtype(dtype).kind in "iu"
            if integral and (int(c) != c or (np.dtype(dtype).kind == "u" and min(a, b, c) < 0)):
                continue
            kw = {}
            if dtype == np.float64:
                kw = dict(openvino="reference", why="the CPU plugin computes f64 Range in f32")
            if (c > 0 and a >= b) or (c < 0 and a <= b):
                kw = dict(openvino="reference" if np.dtype(dtype).itemsize >= 4 else "none", why="the CPU plugin counts |stop - start| / |step| values "
                          "when the step points away from stop; the spec and the core reference (which has no f16, "
                          "bf16 or 8/16-bit kernel) give none")
            if (a, b, c) == (0.1, 1.0, 0.3) and dtype == np.float64:
                kw = dict(openvino="none", why="OpenVINO counts ceil((stop - start) / step) = 3 values; by the "
                          "spec's condition val[3] = 0.9999999999999999 < stop is a fourth (see Range-1's doc)")
            vals = [np.array(v).astype(dtype) for v in (a, b, c)]
            out.append(Case(f"range1-{np.dtype(dtype).name}-{k}", "Range", "opset1",
                            [Input("start", vals[0]), Input("stop", vals[1], const=True),
                             Input("step", vals[2], const=True)], oracle=_oracle, ulps=1, **kw))
    return out


def _errors():
    def err(cid, values, label):
        return Case(cid, "Range", "opset1", named_inputs(("start", "stop", "step"), values),
                    error=label)
    f = np.float32
    return [
        err("range1-err-types", [np.array(0, f), np.array(5, np.int32), np.array(1, f)], "same-element-type"),
        err("range1-err-step-type", [np.array(0, f), np.array(5, f), np.array(1, np.float16)], "same-element-type"),
        err("range1-err-bool", [np.array(False), np.array(True), np.array(True)], "numeric-type"),
        err("range1-err-start-shape", [np.array([0], f), np.array(5, f), np.array(1, f)], "start-shape"),
        err("range1-err-stop-shape", [np.array(0, f), np.array([[5]], f), np.array(1, f)], "stop-shape"),
        err("range1-err-step-shape", [np.array(0, f), np.array(5, f), np.array([1, 2], f)], "step-shape"),
        Case("range1-err-step-zero", "Range", "opset1", [Input("start", np.array(0, f)),
             Input("stop", np.array(5, f), const=True), Input("step", np.array(0, f), const=True)],
             error="range-step"),
    ]


CASES = _cases()
ERRORS = _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_range1(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_range1_refused(case):
    harness.check(case, ERRORS)


@pytest.mark.parametrize("start, stop, step, want", [
    (5, 0, 2**64 - 4, []),          # a u64 step past the i64 range: no value between 5 and 0 going up
    (0, 5, 2**64 - 4, [0]),         # one value, the start
    (5, 0, -2, [5, 3, 1]),          # within the i64 range, as before
])
def test_range4_bounds_past_the_i64_range(start, stop, step, want):
    from irscatter.ops.functional import call
    from irscatter.ops.generation.range import Range

    out = call(Range, [np.int64(start), np.int64(stop), np.uint64(step) if step > 0 else np.int64(step)],
               {"output_type": "i64"})
    assert out.dtype == np.int64 and out.tolist() == want
