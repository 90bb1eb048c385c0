"""ScaledDotProductAttention-13 against OpenVINO's CPU plugin and the per-logit oracle.

Cases: ranks 3 to 5 with batch dimensions that broadcast (and differ in rank) across query,
key, value and the mask; L < S, L = S, L > S (the causal mask is aligned at the top left);
L, S, E, Ev or a batch dimension 0; no mask, boolean and float masks of every broadcast form
(including masks that add batch dimensions or stretch L = 1), the scalar 0 mask, fully masked
rows (NaN), causal with a mask (ignored, even one of a shape that would not broadcast), the
scale input as a scalar and as a 1-element vector (also 0 and negative); f32, f16, bf16, f64;
inputs with NaN, +-inf, -0.0 and denormals.

Tolerance: 2 ulps of the output type plus an absolute term of 8 ulps of the compute type (f32,
or f64 for f64) times max|value| times (1 + the largest possible |logit|): the softmax turns an
error of the logits into a relative error of the weights, and the weighted sum of value's rows
can cancel, so the error scales with value's magnitude rather than the output's. For f16 and
bf16 the term is half an ulp of that type instead: the CPU plugin rounds its logits and weights
to the input type even at f32 inference precision (irscatter computes in f32 and rounds once).

The CPU plugin is not the judge (the oracle is) where it departs: a mask that adds batch
dimensions (it reads the wrong mask elements), S = 0 or E = 0 (it returns memory it has not
written), and bf16 with a size-0 dimension (it fails to compile), and f64.
"""

import re

import harness
import ml_dtypes
import numpy as np
import pytest
from harness import Case, Input
from oracles.matrix import scaled_dot_product_attention as oracle

rng = np.random.default_rng(1313)
OPSET = "opset13"
ETYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.float64]
GROWS = ("the mask adds batch dimensions to the output, as the spec's pseudo-code and OpenVINO's shape inference "
         "allow; the CPU plugin then reads the wrong mask elements (rows of one batch index masked by another's)")


def _finite_max(a):
    a = np.asarray(a, np.float64)
    a = a[np.isfinite(a)]
    return float(np.abs(a).max()) if a.size else 0.0


def _atol(q, k, v, scale):
    e = q.shape[-1]
    factor = abs(float(np.asarray(scale, np.float64).reshape(-1)[0])) if scale is not None else (e ** -0.5 if e else 0)
    bound = factor * e * _finite_max(q) * _finite_max(k)
    if q.dtype in (np.float16, ml_dtypes.bfloat16):  # the CPU plugin rounds its logits and weights to q's type
        return float(ml_dtypes.finfo(q.dtype).eps) / 2 * _finite_max(v) * (1 + bound)
    eps = float(np.finfo(np.float64 if q.dtype == np.float64 else np.float32).eps)
    return 8 * eps * _finite_max(v) * (1 + bound)


def _case(cid, q, k, v, mask=None, scale=None, *, causal=False, **kw):
    inputs = [Input("query", q), Input("key", k), Input("value", v)]
    if mask is not None:
        inputs.append(Input("attention_mask", mask))
    if scale is not None:
        inputs.append(Input("scale", scale))
    if q.dtype == np.float64 and "openvino" not in kw:
        kw.update(openvino="none", why="OpenVINO's CPU plugin computes f64 in f32; the oracle judges")
    return Case(cid, "ScaledDotProductAttention", OPSET, inputs, {"causal": causal},
                oracle=lambda *a: oracle(*a, causal=causal), ulps=2, atol=_atol(q, k, v, scale), **kw)


def _vals(shape, dtype, edges=False):
    return harness.values(rng, shape, np.float32, low=-2, high=2, edges=edges).astype(dtype)


def _bool_mask(shape):
    return rng.random(shape) > 0.3


SHAPES = [  # (query, key, value)
    ((2, 3, 4), (2, 5, 4), (2, 5, 3)),  # L < S
    ((1, 4, 2), (1, 4, 2), (1, 4, 2)),  # L = S
    ((2, 6, 3), (2, 2, 3), (2, 2, 5)),  # L > S
    ((2, 3, 3, 4), (1, 3, 5, 4), (2, 1, 5, 2)),  # batch broadcast
    ((1, 2, 2, 3, 4), (2, 1, 2, 4, 4), (1, 1, 1, 4, 3)),  # rank 5
    ((2, 3, 3, 4), (3, 5, 4), (1, 5, 2)),  # batch ranks differ
    ((2, 1, 4), (2, 3, 4), (2, 3, 2)),  # L = 1
    ((2, 3, 4), (2, 1, 4), (2, 1, 2)),  # S = 1
]

SIZE_ZERO = [
    ((2, 0, 4), (2, 3, 4), (2, 3, 2)),  # L = 0
    ((2, 3, 4), (2, 0, 4), (2, 0, 2)),  # S = 0: an empty sum, zeros
    ((0, 3, 4), (1, 3, 4), (1, 3, 2)),  # a batch of 0
    ((2, 3, 4), (2, 3, 4), (2, 3, 0)),  # Ev = 0
    ((2, 3, 0), (2, 3, 0), (2, 3, 2)),  # E = 0: 1/sqrt(0) times empty products is NaN
]


def _mask_shapes(q, k):
    batch, l_dim, s_dim = q[:-2], q[-2], k[-2]
    return [(l_dim, s_dim), (1, s_dim), (l_dim, 1), (*batch, l_dim, s_dim), (batch[0],) + (1,) * (len(q) - 2) + (s_dim,),
            (3, *batch, l_dim, s_dim)]


def _cases():
    out = []
    for dtype in ETYPES:
        name = np.dtype(dtype).name
        for n, (qs, ks, vs) in enumerate(SHAPES):
            q, k, v = _vals(qs, dtype), _vals(ks, dtype), _vals(vs, dtype)
            out.append(_case(f"sdpa-{name}-{n}", q, k, v))
            out.append(_case(f"sdpa-{name}-{n}-causal", q, k, v, causal=True))
            if dtype == np.float32:
                for m, ms in enumerate(_mask_shapes(qs, ks)):
                    kw = dict(openvino="none", why=GROWS) if m == len(_mask_shapes(qs, ks)) - 1 else {}
                    if (n + m) % 2 == 0:  # each mask form boolean for half of the shapes, float for the rest
                        out.append(_case(f"sdpa-{name}-{n}-bool-{m}", q, k, v, _bool_mask(ms), **kw))
                    else:
                        out.append(_case(f"sdpa-{name}-{n}-float-{m}", q, k, v, _vals(ms, dtype), **kw))
            else:
                out.append(_case(f"sdpa-{name}-{n}-bool", q, k, v, _bool_mask((qs[-2], ks[-2]))))
                out.append(_case(f"sdpa-{name}-{n}-float", q, k, v, _vals(qs[:-1] + (ks[-2],), dtype)))
            if dtype == np.float32 or n % 3 == 0:
                out.append(_case(f"sdpa-{name}-{n}-scale", q, k, v, np.zeros((), dtype), np.array(0.7, dtype)))
                out.append(_case(f"sdpa-{name}-{n}-scale-1d", q, k, v, _bool_mask(qs[:-1] + (ks[-2],)),
                                 np.array([-1.5], dtype)))
                out.append(_case(f"sdpa-{name}-{n}-causal-scale", q, k, v, np.zeros((), dtype),
                                 np.array([0.3], dtype), causal=True))
        for n, (qs, ks, vs) in enumerate(SIZE_ZERO):
            q, k, v = _vals(qs, dtype), _vals(ks, dtype), _vals(vs, dtype)
            kw = {}
            if 0 in (ks[-2], qs[-1]):
                kw = dict(openvino="none", why="with S = 0 or E = 0 the CPU plugin returns memory it has not written")
            elif dtype == ml_dtypes.bfloat16:
                kw = dict(openvino="none", why="the CPU plugin fails to compile a bf16 layer with a size-0 dimension")
            for causal in (False, True):
                out.append(_case(f"sdpa-{name}-zero-{n}-{causal}", q, k, v, causal=causal, **kw))
            out.append(_case(f"sdpa-{name}-zero-{n}-mask", q, k, v, _bool_mask(qs[:-1] + (ks[-2],)), **kw))
            if qs[-1] == 0:  # with a scale the logits are 0 (not NaN): value's rows averaged
                out.append(_case(f"sdpa-{name}-zero-{n}-scale", q, k, v, np.zeros((), dtype), np.array(2, dtype), **kw))
    f32 = np.float32
    q, k, v = _vals((2, 3, 4), f32), _vals((2, 5, 4), f32), _vals((2, 5, 3), f32)
    # a mask that grows the output: it adds batch dimensions, or stretches L = 1
    out.append(_case("sdpa-mask-adds-batch", q, k, v, _vals((3, 2, 3, 5), f32), openvino="none", why=GROWS))
    out.append(_case("sdpa-mask-stretches-l", _vals((2, 1, 4), f32), k, v, _bool_mask((2, 3, 5))))
    # fully masked rows: NaN, by a boolean mask and by a float -inf mask
    masked = _bool_mask((2, 3, 5))
    masked[0, 1, :] = False
    masked[1, :, :] = False
    out.append(_case("sdpa-fully-masked-bool", q, k, v, masked))
    minus = _vals((2, 3, 5), f32)
    minus[1, 2, :] = -np.inf
    minus[0, 0, 1] = -np.inf
    out.append(_case("sdpa-fully-masked-float", q, k, v, minus))
    out.append(_case("sdpa-scalar-false", q, k, v, np.array(False)))
    out.append(_case("sdpa-scalar-float", q, k, v, np.array(1.5, f32)))
    # causal ignores the mask, even one that would broadcast to nothing
    out.append(_case("sdpa-causal-ignores-mask", q, k, v, _bool_mask((2, 3, 5)), causal=True))
    out.append(_case("sdpa-causal-ignores-bad-mask", q, k, v, _vals((7, 7), f32), causal=True))
    out.append(_case("sdpa-large-logits", _vals((2, 3, 4), f32) * 40, _vals((2, 5, 4), f32) * 40, v))
    # edge values: NaN, +-inf, -0.0, denormals, in one input at a time
    for dtype in (np.float32, np.float16):
        name = np.dtype(dtype).name
        shapes = {"query": (2, 4, 4), "key": (2, 6, 4), "value": (2, 6, 3), "mask": (4, 6)}
        for edged in shapes:
            a = {n: _vals(sh, dtype, edges=(n == edged)) for n, sh in shapes.items()}
            out.append(_case(f"sdpa-edges-{name}-{edged}", a["query"], a["key"], a["value"], a["mask"]))
            out.append(_case(f"sdpa-edges-{name}-{edged}-causal", a["query"], a["key"], a["value"], causal=True))
    return out


def _errors():
    f32 = np.float32

    def err(cid, shapes, label, dtypes=None, attrs=None):
        dtypes = dtypes or [f32] * len(shapes)
        inputs = [Input(name, np.zeros(s, d)) for name, s, d in
                  zip(("query", "key", "value", "attention_mask", "scale"), shapes, dtypes)]
        return Case(cid, "ScaledDotProductAttention", OPSET, inputs, {"causal": False} if attrs is None else attrs,
                    error=label)

    qkv = [(2, 3, 4), (2, 5, 4), (2, 5, 3)]
    return [
        err("sdpa-err-rank-query", [(3, 4), (2, 5, 4), (2, 5, 3)], "sdpa-rank"),
        err("sdpa-err-rank-key", [(2, 3, 4), (5, 4), (2, 5, 3)], "sdpa-rank"),
        err("sdpa-err-rank-value", [(2, 3, 4), (2, 5, 4), (3,)], "sdpa-rank"),
        err("sdpa-err-batch", [(2, 3, 4), (3, 5, 4), (2, 5, 3)], "sdpa-batch"),
        err("sdpa-err-batch-value", [(2, 2, 3, 4), (2, 5, 4), (3, 2, 5, 3)], "sdpa-batch"),
        err("sdpa-err-embedding", [(2, 3, 4), (2, 5, 3), (2, 5, 3)], "sdpa-embedding"),
        err("sdpa-err-embedding-one", [(2, 3, 1), (2, 5, 4), (2, 5, 3)], "sdpa-embedding"),
        err("sdpa-err-source", [(2, 3, 4), (2, 5, 4), (2, 4, 3)], "sdpa-source"),
        err("sdpa-err-mask-type", [*qkv, (3, 5)], "sdpa-mask-type", [f32, f32, f32, np.float16]),
        err("sdpa-err-mask-int", [*qkv, (3, 5)], "sdpa-mask-type", [f32, f32, f32, np.int32]),
        err("sdpa-err-mask-rank", [*qkv, (5,)], "sdpa-mask-shape"),
        err("sdpa-err-mask-broadcast", [*qkv, (4, 5)], "sdpa-mask-shape"),
        err("sdpa-err-mask-batch", [*qkv, (3, 3, 5)], "sdpa-mask-shape"),
        err("sdpa-err-mask-stretches-s", [(2, 3, 4), (2, 1, 4), (2, 1, 3), (3, 5)], "sdpa-mask-shape"),
        err("sdpa-err-scale-shape", [*qkv, (), (2,)], "scalar-input"),
        err("sdpa-err-scale-2d", [*qkv, (), (1, 1)], "scalar-input"),
        err("sdpa-err-scale-type", [*qkv, (), ()], "same-element-type", [f32, f32, f32, f32, np.float16]),
        err("sdpa-err-key-type", qkv, "same-element-type", [f32, np.float16, f32]),
        err("sdpa-err-value-type", qkv, "same-element-type", [f32, f32, np.float16]),
        err("sdpa-err-int", qkv, "float-type", [np.int32] * 3),
        err("sdpa-err-causal-missing", qkv, "attributes", attrs={}),
        err("sdpa-err-causal-bad", qkv, "attributes", attrs={"causal": "maybe"}),
    ]


CASES = _cases() + _errors()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_scaled_dot_product_attention(case):
    harness.check(case, CASES)


@pytest.mark.parametrize("mask_shape, message", [
    ((0, 2), "does not broadcast to the logits [1, 4, 2, 2]"),
    ((3,), "must be a scalar or have rank 2 or more"),
])
def test_a_mask_inference_could_not_see_is_checked_at_run_time(mask_shape, message):
    """A mask whose shape inference cannot know (here a layer run on arrays with its ports left
    dynamic; in a model, one read from the state) is refused with the inference label, not a
    numpy error. Found by the model fuzzer on the bundled stateful decoder."""
    import irscatter

    layer = irscatter.parse_layer(
        '<layer id="0" name="sdpa" type="ScaledDotProductAttention" version="opset13"><data causal="false"/>'
        '<input><port id="0" precision="FP32"/><port id="1" precision="FP32"/><port id="2" precision="FP32"/>'
        '<port id="3" precision="FP32"/></input><output><port id="4" precision="FP32"/></output></layer>')
    q = np.zeros((1, 4, 2, 16), np.float32)
    compiled_op = irscatter.ops.registry.instantiate(layer)
    with pytest.raises(irscatter.ExecutionError, match=re.escape(message)) as caught:
        compiled_op.compute(q, q, q, np.zeros(mask_shape, np.float32))
    assert caught.value.label == "sdpa-mask-shape" and caught.value.port == "input 3"
