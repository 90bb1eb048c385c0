"""GroupedMatMul-17 against the per-element oracle (OpenVINO cannot judge it, see below).

Cases: the three forms (2-D x 3-D with offsets, 3-D x 3-D, 2-D x 2-D with offsets), empty
groups, a last offset short of the token count (the tokens after it belong to no group), no
groups at all, size-0 K, M, N and token counts, i32 and i64 offsets given as Parameters and as
Consts; f32, f16, bf16, f64, i32, i64, i8 and u8 (integers wrap), with edge values (NaN,
+-inf, -0.0, denormals, integer extremes). Errors: every labelled check, the offsets' range
both at inference (Const offsets) and at run time (Parameter offsets).

Tolerance: floats 2 ulps of the output type plus 4 ulps of the compute type (f32, or f64)
times the largest |a| * |b| * K of the case (a sum that cancels); integers exact.

OpenVINO is no judge here: the installed OpenVINO's GroupedMatMul-17 takes mat_b as [G, N, K]
(the spec says [G, K, N]) and has no 2-D x 2-D form, so its shape inference refuses the spec's
layouts, and neither its CPU plugin nor its core reference evaluates the op.
"""

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles.matrix import grouped_mat_mul as oracle

rng = np.random.default_rng(1717)
OPSET = "opset17"
WHY = ("OpenVINO's GroupedMatMul-17 takes mat_b as [G, N, K] and has no 2-D x 2-D form (the spec: [G, K, N], "
       "three forms), and neither its CPU plugin nor its core reference evaluates it; the oracle judges")
FLOATS = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]
INTS = [np.int32, np.int64, np.int8, np.uint8]


def _finite_max(a):
    a = np.asarray(a, np.float64)
    a = a[np.isfinite(a)]
    return float(np.abs(a).max()) if a.size else 0.0


def _case(cid, a, b, offsets=None, *, const=False, edges=False, **kw):
    inputs = [Input("mat_a", a), Input("mat_b", b)]
    if offsets is not None:
        inputs.append(Input("offsets", offsets, const=const))
    tol = {}
    if a.dtype.kind not in "iu":
        inner = a.shape[-1] if b.ndim == 3 else a.shape[1]
        eps = float(np.finfo(np.float64 if a.dtype == np.float64 else np.float32).eps)
        tol = dict(ulps=2, atol=4 * eps * _finite_max(a) * _finite_max(b) * max(inner, 1))
    return Case(cid, "GroupedMatMul", OPSET, inputs, {}, oracle=oracle, openvino="none", why=WHY, **{**tol, **kw})


def _vals(shape, dtype, edges=False):
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return harness.values(rng, shape, dtype, low=max(-50, int(info.min)), high=50, edges=edges)
    return harness.values(rng, shape, np.float32, low=-2, high=2, edges=edges).astype(dtype)


def _offsets(sizes, dtype):
    return np.cumsum(sizes).astype(dtype)


FORMS = [  # (name, mat_a shape, mat_b shape, group sizes or None)
    ("2x3", (10, 4), (3, 4, 5), [3, 5, 2]),
    ("2x3-empty-group", (7, 3), (4, 3, 2), [0, 4, 0, 3]),
    ("2x3-short", (9, 4), (2, 4, 3), [2, 4]),  # tokens 6..8 are in no group: rows of 0
    ("2x3-one", (5, 2), (1, 2, 6), [5]),
    ("2x3-no-groups", (3, 4), (0, 4, 5), []),
    ("2x3-no-tokens", (0, 4), (2, 4, 5), [0, 0]),
    ("2x3-k0", (4, 0), (2, 0, 3), [1, 3]),
    ("3x3", (3, 4, 5), (3, 5, 2), None),
    ("3x3-one", (1, 2, 3), (1, 3, 4), None),
    ("3x3-g0", (0, 2, 3), (0, 3, 4), None),
    ("3x3-m0", (2, 0, 3), (2, 3, 4), None),
    ("3x3-k0", (2, 3, 0), (2, 0, 4), None),
    ("2x2", (4, 10), (10, 3), [3, 5, 2]),
    ("2x2-empty-group", (3, 6), (6, 5), [0, 2, 0, 4]),
    ("2x2-short", (2, 8), (8, 3), [3, 5]),  # tokens 5..7 take part in no group
    ("2x2-no-groups", (3, 4), (4, 2), []),
    ("2x2-no-tokens", (3, 0), (0, 2), [0, 0, 0]),
]


def _cases():
    out = []
    for dtype in FLOATS + INTS:
        name = np.dtype(dtype).name
        for k, (form, sa, sb, sizes) in enumerate(FORMS):
            a, b = _vals(sa, dtype), _vals(sb, dtype)
            offsets_type = np.int32 if k % 2 else np.int64
            offsets = None if sizes is None else _offsets(sizes, offsets_type)
            out.append(_case(f"gmm-{name}-{form}", a, b, offsets, const=k % 3 == 0))
        for form, sa, sb, sizes in (FORMS[0], FORMS[7], FORMS[12]):
            a, b = _vals(sa, dtype, edges=True), _vals(sb, dtype, edges=True)
            offsets = None if sizes is None else _offsets(sizes, np.int64)
            out.append(_case(f"gmm-{name}-{form}-edges", a, b, offsets))
    # integers wrap: products and sums past the type's range
    big = np.full((2, 3, 4), 100, np.int8)
    out.append(_case("gmm-int8-wrap", big, np.full((2, 4, 2), 100, np.int8)))
    huge = np.full((3, 2), 2**62, np.int64)
    out.append(_case("gmm-int64-wrap", huge, np.full((2, 2, 2), 3, np.int64), np.array([1, 3], np.int32)))
    out.append(_case("gmm-uint8-wrap", np.full((2, 4), 200, np.uint8), np.full((4, 3), 7, np.uint8),
                     np.array([1, 4], np.int64)))
    return out


def _errors():
    f32 = np.float32

    def err(cid, sa, sb, label, offsets=None, *, const=False, dtypes=(f32, f32)):
        inputs = [Input("mat_a", np.ones(sa, dtypes[0])), Input("mat_b", np.ones(sb, dtypes[1]))]
        if offsets is not None:
            inputs.append(Input("offsets", offsets, const=const))
        return Case(cid, "GroupedMatMul", OPSET, inputs, {}, error=label)

    i64 = np.int64
    return [
        err("gmm-err-rank-3x2", (2, 3, 4), (4, 5), "grouped-matmul-rank"),
        err("gmm-err-rank-1x3", (4,), (2, 4, 5), "grouped-matmul-rank", np.array([2, 4], i64)),
        err("gmm-err-rank-4x3", (1, 2, 3, 4), (2, 4, 5), "grouped-matmul-rank"),
        err("gmm-err-offsets-3x3", (2, 3, 4), (2, 4, 5), "grouped-matmul-offsets", np.array([1, 2], i64)),
        err("gmm-err-no-offsets-2x3", (5, 4), (2, 4, 5), "grouped-matmul-offsets"),
        err("gmm-err-no-offsets-2x2", (4, 5), (5, 3), "grouped-matmul-offsets"),
        err("gmm-err-inner-3x3", (2, 3, 4), (2, 5, 5), "grouped-matmul-inner"),
        err("gmm-err-inner-2x3", (5, 4), (2, 3, 5), "grouped-matmul-inner", np.array([2, 5], i64)),
        err("gmm-err-inner-2x2", (4, 5), (6, 3), "grouped-matmul-inner", np.array([2, 5], i64)),
        err("gmm-err-groups-3x3", (2, 3, 4), (3, 4, 5), "grouped-matmul-groups"),
        err("gmm-err-groups-2x3", (5, 4), (3, 4, 5), "grouped-matmul-groups", np.array([2, 5], i64)),
        err("gmm-err-offsets-type", (5, 4), (2, 4, 5), "index-type", np.array([2, 5], np.float32)),
        err("gmm-err-offsets-u8", (5, 4), (2, 4, 5), "index-type", np.array([2, 5], np.uint8)),
        err("gmm-err-offsets-rank", (5, 4), (2, 4, 5), "index-rank", np.array([[2, 5]], i64)),
        err("gmm-err-types", (2, 3, 4), (2, 4, 5), "same-element-type", dtypes=(f32, np.float16)),
        err("gmm-err-bool", (2, 3, 4), (2, 4, 5), "numeric-type", dtypes=(np.bool_, np.bool_)),
        # offsets out of range: refused at inference when constant, at run time otherwise
        err("gmm-err-offsets-past-end", (5, 4), (2, 4, 5), "index-range", np.array([2, 6], i64)),
        err("gmm-err-offsets-past-end-const", (5, 4), (2, 4, 5), "index-range", np.array([2, 6], i64), const=True),
        err("gmm-err-offsets-negative", (5, 4), (2, 4, 5), "index-range", np.array([-1, 5], np.int32)),
        err("gmm-err-offsets-decreasing", (4, 5), (5, 3), "index-range", np.array([3, 2, 5], i64)),
        err("gmm-err-offsets-decreasing-const", (4, 5), (5, 3), "index-range", np.array([3, 2, 5], i64),
            const=True),
    ]


CASES = _cases() + _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_grouped_mat_mul(case):
    harness.check(case, CASES)
