"""RNNCell-1, GRUCell-3, LSTMCell-1 and LSTMCell-4 against OpenVINO's CPU plugin and the oracles.

Tolerance: a cell is two small matrix products, a bias and up to five transcendental functions
per element, computed in f32 in an order the CPU plugin chooses (it fuses and blocks the
products), so exact agreement is out of reach. f32 outputs are held to 64 ulps plus an
absolute 1e-5 (the outputs of tanh and sigmoid lie in (-1, 1), where 1e-5 is far below any
gate or layout mistake, which moves them by 1e-2 or more); f16 and bf16 round once from f32,
so they are held to 2 ulps of their own type plus 1e-6 near 0. f64 is judged by the oracle
alone (the CPU plugin computes it in f32), to 64 ulps plus 1e-12, and so is bf16: the CPU
plugin computes a bf16 cell in bf16 even at f32 inference precision, rounding every
intermediate, and lands tens of bf16 ulps away where gates cancel (irscatter computes in f32
and rounds once, as for every op).

LSTMCell-1's peepholes P and input_forget are judged by the oracle alone: the CPU plugin runs
LSTMCell-1 as LSTMCell-4 and ignores both (OpenVINO's core reference computes them, but it
cannot evaluate the op out of process).
"""

import functools

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles import recurrent as oracle

FLOATS = element_dtypes("f32", "f16", "bf16", "f64")
F64 = {"openvino": "none", "why": "the CPU plugin computes f64 in f32"}
BF16 = {"openvino": "none", "why": "the CPU plugin computes bf16 cells in bf16, rounding every intermediate"}
EMPTY = {"openvino": "none", "why": "the CPU plugin dies of SIGFPE on an empty batch"}
NO_B = {"openvino": "none", "why": "OpenVINO cannot read a GRUCell or LSTMCell without B, optional in the spec"}
TOLERANCE = {"f32": {"ulps": 64, "atol": 1e-5}, "f16": {"ulps": 2, "atol": 1e-6},
             "bf16": {"ulps": 2, "atol": 1e-6}, "f64": {"ulps": 64, "atol": 1e-12}}


def _judge(tname):
    return {**TOLERANCE[tname], **{"f64": F64, "bf16": BF16}.get(tname, {})}


def _v(rng, shape, dtype, low=-1.0, high=1.0):
    return harness.values(rng, shape, dtype, low=low, high=high)


def _attrs(hidden, activations=None, clip=None, **extra):
    attrs = {"hidden_size": hidden, **extra}
    if activations is not None:
        attrs["activations"] = activations
    if clip is not None:
        attrs["clip"] = clip
    return attrs


def _oracle_kw(attrs):
    kw = {k: v for k, v in attrs.items() if k in ("activations", "clip", "linear_before_reset", "input_forget")}
    return kw


def _rnn(rng):
    cases = []
    settings = [(None, None), ("relu", None), ("sigmoid", None), ("tanh", 0.7), ("relu", 0.5), ("Tanh", 0)]
    for tname, dtype in FLOATS.items():
        for k, (acts, clip) in enumerate(settings if tname == "f32" else settings[:2]):
            n, i, hs = (int(v) for v in rng.integers(1, 5, 3))
            if tname == "f32" and k == 5:
                n = 0  # an empty batch
            attrs = _attrs(hs, acts, clip)
            ins = [Input("X", _v(rng, (n, i), dtype, -3, 3)), Input("H", _v(rng, (n, hs), dtype)),
                   Input("W", _v(rng, (hs, i), dtype), const=True), Input("R", _v(rng, (hs, hs), dtype), const=True),
                   Input("B", _v(rng, (hs,), dtype), const=True)]
            judge = _judge(tname) if n else {**TOLERANCE[tname], **EMPTY}
            cases.append(Case(f"RNNCell-{tname}-{acts}-{clip}-{n}x{i}x{hs}", "RNNCell", "opset3", ins, attrs,
                              oracle=functools.partial(oracle.rnn_cell, **_oracle_kw(attrs)), **judge))
    # opset1 holds RNNCell too
    ins = [Input("X", _v(rng, (2, 3), np.float32)), Input("H", _v(rng, (2, 2), np.float32)),
           Input("W", _v(rng, (2, 3), np.float32), const=True), Input("R", _v(rng, (2, 2), np.float32), const=True),
           Input("B", _v(rng, (2,), np.float32), const=True)]
    cases.append(Case("RNNCell-opset1", "RNNCell", "opset1", ins, {"hidden_size": 2}, oracle=oracle.rnn_cell,
                      **TOLERANCE["f32"]))
    return cases


def _gru(rng):
    cases = []
    settings = [(None, None), ("tanh,sigmoid", None), ("sigmoid,relu", 0.9), ("relu,tanh", None)]
    for tname, dtype in FLOATS.items():
        for lbr in (False, True):
            for k, (acts, clip) in enumerate(settings if tname == "f32" else settings[:1]):
                n, i, hs = (int(v) for v in rng.integers(1, 5, 3))
                attrs = _attrs(hs, acts, clip, linear_before_reset=lbr)
                with_b = not (tname == "f32" and k == 3)
                ins = [Input("X", _v(rng, (n, i), dtype, -3, 3)), Input("initial_hidden_state", _v(rng, (n, hs), dtype)),
                       Input("W", _v(rng, (3 * hs, i), dtype), const=True),
                       Input("R", _v(rng, (3 * hs, hs), dtype), const=True)]
                if with_b:
                    ins.append(Input("B", _v(rng, ((4 if lbr else 3) * hs,), dtype), const=True))
                judge = _judge(tname) if with_b else {**TOLERANCE[tname], **NO_B}
                cases.append(Case(f"GRUCell-{tname}-lbr{int(lbr)}-{acts}-{clip}-{'B' if with_b else 'noB'}",
                                  "GRUCell", "opset3", ins, attrs,
                                  oracle=functools.partial(oracle.gru_cell, **_oracle_kw(attrs)), **judge))
    return cases


def _lstm_inputs(rng, dtype, n, i, hs, bias=True, peepholes=False):
    ins = [Input("X", _v(rng, (n, i), dtype, -3, 3)), Input("initial_hidden_state", _v(rng, (n, hs), dtype)),
           Input("initial_cell_state", _v(rng, (n, hs), dtype, -2, 2)),
           Input("W", _v(rng, (4 * hs, i), dtype), const=True), Input("R", _v(rng, (4 * hs, hs), dtype), const=True)]
    if bias:
        ins.append(Input("B", _v(rng, (4 * hs,), dtype), const=True))
    if peepholes:
        ins.append(Input("P", _v(rng, (3 * hs,), dtype), const=True))
    return ins


def _lstm(rng):
    cases = []
    settings = [(None, None), ("tanh,sigmoid,relu", None), ("sigmoid,tanh,tanh", 0.8), ("relu,relu,sigmoid", 2.0)]
    for opset in ("opset4", "opset1"):
        for tname, dtype in FLOATS.items():
            for k, (acts, clip) in enumerate(settings if tname == "f32" else settings[:1]):
                n, i, hs = (int(v) for v in rng.integers(1, 5, 3))
                bias = not (tname == "f32" and k == 1)
                attrs = _attrs(hs, acts, clip)
                judge = _judge(tname) if bias else {**TOLERANCE[tname], **NO_B}
                cases.append(Case(f"LSTMCell-{opset}-{tname}-{acts}-{clip}-{'B' if bias else 'noB'}", "LSTMCell",
                                  opset, _lstm_inputs(rng, dtype, n, i, hs, bias), attrs,
                                  oracle=functools.partial(oracle.lstm_cell, **_oracle_kw(attrs)), **judge))
    ignored = {"openvino": "none", "why": "the CPU plugin ignores LSTMCell-1's P and input_forget"}
    for tname in ("f32", "f16", "f64"):
        dtype = FLOATS[tname]
        for peepholes, forget in ((True, False), (True, True), (False, True)):
            n, i, hs = (int(v) for v in rng.integers(1, 5, 3))
            attrs = _attrs(hs, None, 1.5 if forget else None, input_forget=forget, weights_format="fico")
            cases.append(Case(f"LSTMCell-opset1-{tname}-P{int(peepholes)}-forget{int(forget)}", "LSTMCell", "opset1",
                              _lstm_inputs(rng, dtype, n, i, hs, True, peepholes), attrs,
                              oracle=functools.partial(oracle.lstm_cell, **_oracle_kw(attrs)),
                              **{**TOLERANCE[tname], **ignored}))
    # the CPU plugin agrees when input_forget is false and P is zero
    attrs = _attrs(3)
    ins = _lstm_inputs(rng, np.float32, 2, 2, 3, True, False) + [Input("P", np.zeros(9, np.float32), const=True)]
    cases.append(Case("LSTMCell-opset1-zero-P", "LSTMCell", "opset1", ins, attrs, oracle=oracle.lstm_cell,
                      **TOLERANCE["f32"]))
    return cases


def _errors():
    f32 = np.float32
    z = np.zeros

    def rnn(x=(2, 3), h=(2, 4), w=(4, 3), r=(4, 4), b=(4,), dtype=f32, bdtype=None, **attrs):
        ins = [Input("X", z(x, dtype)), Input("H", z(h, dtype)), Input("W", z(w, dtype)), Input("R", z(r, dtype)),
               Input("B", z(b, bdtype or dtype))]
        return ins, {"hidden_size": 4, **attrs}

    def lstm(p=(12,), w=(16, 3), **attrs):
        ins = [Input("X", z((2, 3), f32)), Input("initial_hidden_state", z((2, 4), f32)),
               Input("initial_cell_state", z((2, 4), f32)), Input("W", z(w, f32)), Input("R", z((16, 4), f32)),
               Input("B", z((16,), f32)), Input("P", z(p, f32))]
        return ins, {"hidden_size": 4, **attrs}

    cases = []
    for name, (ins, attrs), label in [
        ("x-rank", rnn(x=(2, 3, 1)), "recurrent-rank"),
        ("b-rank", rnn(b=(1, 4)), "recurrent-rank"),
        ("batch", rnn(h=(3, 4)), "recurrent-shape"),
        ("input-size", rnn(w=(4, 2)), "recurrent-shape"),
        ("hidden-h", rnn(h=(2, 5)), "recurrent-shape"),
        ("hidden-attr", rnn(hidden_size=5), "recurrent-shape"),
        ("w-rows", rnn(w=(5, 3)), "recurrent-shape"),
        ("b-size", rnn(b=(5,)), "recurrent-shape"),
        ("clip-negative", rnn(clip=-1.0), "recurrent-clip"),
        ("clip-nan", rnn(clip="nan"), "recurrent-clip"),
        ("no-activations", rnn(activations=""), "recurrent-activations"),
        ("bad-activation", rnn(activations="elu"), "attributes"),
        ("hidden-zero", rnn(hidden_size=0), "attributes"),
        ("int-type", rnn(dtype=np.int32), "float-type"),
        ("mixed-types", rnn(bdtype=np.float16), "same-element-type"),
    ]:
        cases.append(Case(f"RNNCell-error-{name}", "RNNCell", "opset3", ins, attrs, error=label))
    gru = [Input("X", z((2, 3), f32)), Input("initial_hidden_state", z((2, 4), f32)), Input("W", z((12, 3), f32)),
           Input("R", z((12, 4), f32)), Input("B", z((12,), f32))]
    cases += [
        Case("GRUCell-error-lbr-bias", "GRUCell", "opset3", gru, {"hidden_size": 4, "linear_before_reset": True},
             error="recurrent-shape"),
        Case("GRUCell-error-one-activation", "GRUCell", "opset3", gru, {"hidden_size": 4, "activations": "tanh"},
             error="recurrent-activations"),
        Case("LSTMCell-error-two-activations", "LSTMCell", "opset4", lstm()[0][:6],
             {"hidden_size": 4, "activations": "sigmoid,tanh"}, error="recurrent-activations"),
        Case("LSTMCell-error-w-rows", "LSTMCell", "opset4", lstm(w=(12, 3))[0][:6], {"hidden_size": 4},
             error="recurrent-shape"),
        Case("LSTMCell-error-peepholes", "LSTMCell", "opset1", *lstm(p=(8,)), error="peepholes-shape"),
        Case("LSTMCell-error-peepholes-rank", "LSTMCell", "opset1", *lstm(p=(3, 4)), error="recurrent-rank"),
        Case("LSTMCell-error-weights-format", "LSTMCell", "opset1", *lstm(weights_format="ifco"),
             error="weights-format"),
        Case("LSTMCell-error-v4-has-no-P", "LSTMCell", "opset4", *lstm(), error="input-count"),
    ]
    return cases


def _edges(rng):
    """NaN, infinities, -0.0 and a denormal in X: they reach every hidden unit of their batch row."""
    cases = []
    for tname in ("f32", "f16"):
        dtype = FLOATS[tname]
        x = harness.values(rng, (3, 4), dtype, low=-3, high=3, edges=True)
        h = _v(rng, (3, 2), dtype)
        ins = [Input("X", x), Input("H", h), Input("W", _v(rng, (2, 4), dtype), const=True),
               Input("R", _v(rng, (2, 2), dtype), const=True), Input("B", _v(rng, (2,), dtype), const=True)]
        cases.append(Case(f"RNNCell-{tname}-edges", "RNNCell", "opset3", ins, {"hidden_size": 2},
                          oracle=oracle.rnn_cell, **TOLERANCE[tname]))
        ins = [Input("X", x), Input("initial_hidden_state", h), Input("W", _v(rng, (6, 4), dtype), const=True),
               Input("R", _v(rng, (6, 2), dtype), const=True), Input("B", _v(rng, (8,), dtype), const=True)]
        cases.append(Case(f"GRUCell-{tname}-edges", "GRUCell", "opset3", ins,
                          {"hidden_size": 2, "linear_before_reset": True},
                          oracle=functools.partial(oracle.gru_cell, linear_before_reset=True), **TOLERANCE[tname]))
        ins = [Input("X", x), Input("initial_hidden_state", h), Input("initial_cell_state", _v(rng, (3, 2), dtype)),
               Input("W", _v(rng, (8, 4), dtype), const=True), Input("R", _v(rng, (8, 2), dtype), const=True),
               Input("B", _v(rng, (8,), dtype), const=True)]
        cases.append(Case(f"LSTMCell-{tname}-edges", "LSTMCell", "opset4", ins, {"hidden_size": 2},
                          oracle=oracle.lstm_cell, **TOLERANCE[tname]))
    return cases


def _cases():
    rng = np.random.default_rng(20240516)
    return _rnn(rng) + _gru(rng) + _lstm(rng) + _edges(rng) + _errors()


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_recurrent_cell(case):
    harness.check(case, CASES)
