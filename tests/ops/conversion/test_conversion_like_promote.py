"""ConvertLike-1 and ConvertPromoteTypes-14 against OpenVINO and the per-element oracle.

ConvertLike: data of every numeric type converted to the type of `like` (every numeric type),
with edge values; the conversion rules are Convert-1's (`convert_array`), so the cases follow
that module's choices. Where OpenVINO departs from them (float to integer out of range, NaN
to integer: undefined in the spec), inputs are kept inside the destination's range.

ConvertPromoteTypes: the promotion table is checked exhaustively, over every pair of the 18
types it takes, both orders, every promote_unsafe / pytorch_scalar_promotion setting and
scalar or non-scalar ranks, against OpenVINO's own type inference (in process). The values
are checked on a few pairs against the CPU plugin. Tolerance: exact.
"""

import itertools

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles.conversion import convert_like, convert_promote_types

from irscatter.ir.element_types import ElementType
from irscatter.ops.conversion.convert_promote_types import SUPPORTED, common_type

rng = np.random.default_rng(2024)
E = ElementType
NUMERIC = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64, np.int8, np.int16, np.int32, np.int64,
           np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]


def _safe_values(shape, src, dst):
    """Values of `src` that every destination `dst` represents (no undefined conversions)."""
    s, d = np.dtype(src), np.dtype(dst)
    if s == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if d.kind in "iu" and s.kind not in "iub":
        info = np.iinfo(d)
        lo, hi = max(float(info.min), -100), min(float(info.max), 100)
        return rng.uniform(lo, hi, shape).astype(src)
    if d.kind == "b":
        # NaN is true by Convert-1's rule; the CPU plugin makes it false for f16 and bf16, and it
        # runs i64 as i32 (so -2^63 becomes 0): both left out
        if s.kind in "iu":
            return harness.values(rng, shape, src, low=-1000, high=1000)
        out = harness.values(rng, shape, np.float32, edges=True)
        return (out if s == np.float32 else np.where(np.isnan(out), 2.0, out)).astype(src)
    if s.kind in "iu" and d.kind in "iu":
        return harness.values(rng, shape, src, low=0, high=100)
    if s.kind in "iu":
        return harness.values(rng, shape, src, low=-100 if s.kind == "i" else 0, high=100)
    out = harness.values(rng, shape, np.float32, edges=True)
    if s == np.float64:  # the CPU plugin reads f64 infinities as +-3.4028235e38
        out = np.where(np.isinf(out), 7.0, out)
    if np.dtype(src) == ml_dtypes.bfloat16:
        out = np.where(np.isnan(out), 0.5, out)  # harness compares bf16 inputs without equal_nan
    return out.astype(src)


def _like_cases():
    out = []
    shapes = harness.shapes(rng)
    for k, (src, dst) in enumerate(itertools.product(NUMERIC, NUMERIC)):
        shape = shapes[k % len(shapes)]
        data = _safe_values(shape, src, dst)
        like = np.zeros((3,), dst)
        kw = {}
        out.append(Case(f"like-{np.dtype(src).name}-{np.dtype(dst).name}", "ConvertLike", "opset1",
                        [Input("data", data), Input("like", like, const=True)], oracle=convert_like, **kw))
    return out


PAIRS = [  # (a, b, attrs, ranks)
    (np.float16, np.float32, {}, (2, 1)),
    (np.int16, np.uint32, {"promote_unsafe": True}, (2, 1)),
    (np.int16, np.uint64, {"promote_unsafe": True}, (1, 1)),
    (np.int16, np.uint64, {"promote_unsafe": True, "u64_integer_promotion_target": E.i64}, (1, 1)),
    (np.int8, np.float32, {}, (3, 0)),
    (np.int32, np.uint8, {}, (1, 2)),
    (np.int64, np.uint8, {"pytorch_scalar_promotion": True, "promote_unsafe": True}, (0, 2)),
    (np.float16, np.int8, {"pytorch_scalar_promotion": True}, (0, 1)),
    (np.bool_, np.int32, {}, (2, 2)),
    (np.float16, ml_dtypes.bfloat16, {"promote_unsafe": True}, (1, 2)),
    (np.uint8, np.uint16, {}, (2, 1)),
]


def _promote_cases():
    out = []
    for k, (a, b, attrs, (ra, rb)) in enumerate(PAIRS):
        ta, tb = E.from_dtype(np.dtype(a)), E.from_dtype(np.dtype(b))
        common = common_type(ta, tb, ra, rb, **{"promote_unsafe": False, "pytorch_scalar_promotion": False,
                                                "u64_integer_promotion_target": E.f32, **attrs})
        shape = lambda r: tuple(int(d) for d in rng.integers(1, 4, r))
        xa = _safe_values(shape(ra), a, common.dtype)
        xb = _safe_values(shape(rb), b, common.dtype)
        out.append(Case(f"promote-{k}-{ta}-{tb}", "ConvertPromoteTypes", "opset14",
                        [Input("a", xa), Input("b", xb)], attrs, oracle=convert_promote_types(common)))
    return out


def _errors():
    def err(cid, a, b, label, **attrs):
        return Case(cid, "ConvertPromoteTypes", "opset14", [Input("a", a), Input("b", b)], attrs, error=label)
    z = lambda t, s=(2,): np.zeros(s, t)
    return [
        Case("like-err-string", "ConvertLike", "opset1", [Input("data", np.array(["a"], dtype=np.dtypes.StringDType())),
             Input("like", z(np.float32), const=True)], error="no-string-conversion"),
        err("promote-err-safe-float", z(np.float16), z(np.int16), "promote-types"),
        err("promote-err-u64", z(np.uint64), z(np.int8), "promote-types"),
        err("promote-err-widening", z(np.uint8), z(np.int8), "promote-types"),
        err("promote-err-f16-bf16", z(np.float16), z(ml_dtypes.bfloat16), "promote-types"),
        err("promote-err-pytorch", z(np.int64, ()), z(np.uint8), "promote-types", pytorch_scalar_promotion=True),
        err("promote-err-type", z(ml_dtypes.float8_e8m0fnu), z(np.int8), "promote-unsupported"),
        err("promote-err-target", z(np.uint64), z(np.int8), "output-type", promote_unsafe=True,
            u64_integer_promotion_target="string"),
    ]


LIKE = _like_cases()
PROMOTE = _promote_cases()
ERRORS = _errors()


@pytest.mark.parametrize("case", LIKE, ids=str)
def test_convert_like(case):
    harness.check(case, LIKE)


@pytest.mark.parametrize("case", PROMOTE, ids=str)
def test_convert_promote_types(case):
    harness.check(case, PROMOTE)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_conversion_refused(case):
    harness.check(case, ERRORS)


def test_promotion_table_is_openvinos():
    """Every pair of supported types, both orders, every setting, scalar or not: the common type
    (or the refusal) equals OpenVINO's type inference."""
    ov = pytest.importorskip("openvino")
    import openvino.opset14 as ops

    types = sorted(SUPPORTED - {E.boolean}, key=str) + [E.boolean]
    mismatches = []
    for a, b in itertools.product(types, types):
        for unsafe, torch, ra, rb in itertools.product((False, True), (False, True), (0, 1), (0, 1)):
            for target in ((E.f32, E.i64) if unsafe else (E.f32,)):
                pa = ops.parameter([2] * ra, getattr(ov.Type, str(a)))
                pb = ops.parameter([3] * rb, getattr(ov.Type, str(b)))
                try:
                    node = ops.convert_promote_types(pa, pb, promote_unsafe=unsafe, pytorch_scalar_promotion=torch,
                                                     u64_integer_promotion_target=getattr(ov.Type, str(target)))
                    want = str(node.get_output_element_type(0).get_type_name())
                except Exception:
                    want = "refused"
                try:
                    got = str(common_type(a, b, ra, rb, promote_unsafe=unsafe, pytorch_scalar_promotion=torch,
                                          u64_integer_promotion_target=target))
                except Exception:
                    got = "refused"
                if got != want:
                    mismatches.append((str(a), str(b), unsafe, torch, ra, rb, str(target), got, want))
    assert mismatches == []
