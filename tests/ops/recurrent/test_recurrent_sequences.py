"""RNNSequence-5, GRUSequence-5 and LSTMSequence-5 against OpenVINO's CPU plugin and the oracles:
every direction, sequence lengths full, partial and 0, activations, clip, linear_before_reset.

Tolerance: each time step is a cell (see test_recurrent_cells.py), and the differences of one
step feed the next, so they grow with the number of steps; the sequences here have at most 5
steps and hold f32 to 128 ulps plus an absolute 2e-5 (a wrong gate, direction or mask moves an
output by 1e-2 or more). f16 rounds once from f32 and is held to 2 ulps plus 1e-6; bf16 and
f64 are judged by the oracle alone (the CPU plugin computes bf16 in bf16 and f64 in f32).
"""

import functools

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles import recurrent as oracle

FLOATS = element_dtypes("f32", "f16", "bf16", "f64")
TOLERANCE = {"f32": {"ulps": 128, "atol": 2e-5}, "f16": {"ulps": 2, "atol": 1e-6},
             "bf16": {"ulps": 2, "atol": 1e-6}, "f64": {"ulps": 64, "atol": 1e-12}}
NOT_CPU = {"f64": {"openvino": "none", "why": "the CPU plugin computes f64 in f32"},
           "bf16": {"openvino": "none", "why": "the CPU plugin computes bf16 sequences in bf16, rounding every step"}}
DEFAULTS = {"RNNSequence": "tanh", "GRUSequence": "sigmoid,tanh", "LSTMSequence": "sigmoid,tanh,tanh"}
OPS = {  # type: (gate blocks, states, oracle)
    "RNNSequence": (1, 1, oracle.rnn_sequence),
    "GRUSequence": (3, 1, oracle.gru_sequence),
    "LSTMSequence": (4, 2, oracle.lstm_sequence),
}


def _v(rng, shape, dtype, low=-1.0, high=1.0):
    return harness.values(rng, shape, dtype, low=low, high=high)


def _case(rng, type_, tname, direction, *, n=None, t=None, lengths=None, activations=None, clip=None, lbr=False,
          length_type=np.int32, judge=None, tag=""):
    gates, states, fn = OPS[type_]
    dtype = FLOATS[tname]
    n = int(rng.integers(1, 5)) if n is None else n
    t = int(rng.integers(1, 6)) if t is None else t
    i, hs = (int(v) for v in rng.integers(1, 5, 2))
    dirs = 2 if direction == "bidirectional" else 1
    if lengths is None:
        lengths = rng.integers(0, t + 1, n)
        lengths[rng.integers(0, n)] = t  # at least one row runs every step
    state_names = ["H"] if type_ == "RNNSequence" else ["initial_hidden_state", "initial_cell_state"][:states]
    ins = [Input("X", _v(rng, (n, t, i), dtype, -3, 3))]
    ins += [Input(name, _v(rng, (n, dirs, hs), dtype)) for name in state_names]
    ins += [Input("sequence_lengths", np.asarray(lengths, dtype=length_type)),
            Input("W", _v(rng, (dirs, gates * hs, i), dtype), const=True),
            Input("R", _v(rng, (dirs, gates * hs, hs), dtype), const=True),
            Input("B", _v(rng, (dirs, (4 if lbr else gates) * hs), dtype), const=True)]
    attrs = {"hidden_size": hs, "direction": direction}
    kw = {"direction": direction}
    if activations is None and not judge:
        activations = DEFAULTS[type_]  # OpenVINO reads no activations at all when the attribute is missing
    if activations is not None:
        attrs["activations"] = kw["activations"] = activations
    if clip is not None:
        attrs["clip"] = kw["clip"] = clip
    if type_ == "GRUSequence":
        attrs["linear_before_reset"] = kw["linear_before_reset"] = lbr
    name = "-".join(str(p) for p in (type_, tname, direction, f"{n}x{t}x{i}x{hs}", activations, clip,
                                     f"lbr{int(lbr)}", np.dtype(length_type).name, tag) if p is not None and p != "")
    judge = judge or NOT_CPU.get(tname, {})
    return Case(name, type_, "opset5", ins, attrs, oracle=functools.partial(fn, **kw), **TOLERANCE[tname], **judge)


def _cases():
    rng = np.random.default_rng(51)
    cases = []
    acts = {"RNNSequence": ["relu", "sigmoid"], "GRUSequence": ["tanh,sigmoid", "sigmoid,relu"],
            "LSTMSequence": ["tanh,sigmoid,relu", "relu,tanh,sigmoid"]}
    for type_ in OPS:
        for lbr in ((False, True) if type_ == "GRUSequence" else (False,)):
            for direction in ("forward", "reverse", "bidirectional"):
                for tname in FLOATS:
                    cases.append(_case(rng, type_, tname, direction, lbr=lbr))
                cases.append(_case(rng, type_, "f32", direction, lbr=lbr, activations=acts[type_][0], clip=0.9))
                cases.append(_case(rng, type_, "f32", direction, lbr=lbr, activations=acts[type_][1]))
                cases.append(_case(rng, type_, "f32", direction, lbr=lbr, length_type=np.int64, clip=0))
            # every row at full length, and every row empty
            cases.append(_case(rng, type_, "f32", "bidirectional", n=3, t=4, lengths=[4, 4, 4], lbr=lbr, tag="full"))
            cases.append(_case(rng, type_, "f32", "reverse", n=2, t=3, lengths=[0, 0], lbr=lbr, tag="empty"))
            cases.append(_case(rng, type_, "f32", "forward", n=2, t=3, lengths=[3, 1], lbr=lbr, length_type=np.uint8,
                               tag="u8-lengths",
                               judge={"openvino": "none", "why": "the CPU plugin takes i32 and i64 lengths only"}))
            cases.append(_case(rng, type_, "f32", "reverse", lbr=lbr, tag="default-activations",
                               judge={"openvino": "none", "why": "OpenVINO reads a sequence without the activations "
                                      "attribute as having no activations (the spec gives defaults)"}))
            cases.append(_case(rng, type_, "f32", "bidirectional", n=2, t=0, lengths=[0, 0], lbr=lbr, tag="no-steps",
                               judge={"openvino": "none", "why": "the CPU plugin does not run an empty sequence"}))
    # NaN and inf in X past each row's length must not reach Y, Ho or Co
    for type_ in OPS:
        for direction in ("forward", "reverse", "bidirectional"):
            case = _case(rng, type_, "f32", direction, n=3, t=4, lengths=[4, 2, 0], tag="nan-past-length")
            x = case.inputs[0].value.copy()
            x[1, 2:] = np.nan
            x[2, :, ::2] = np.inf
            case.inputs[0] = Input("X", x)
            cases.append(case)
    return cases + _errors()


def _errors():
    f32, z = np.float32, np.zeros

    def lstm(direction="forward", dirs=1, w_dirs=None, lengths=(3, 3), lengths_type=np.int32, x=(2, 3, 2), **extra):
        ins = [Input("X", z(x, f32)), Input("initial_hidden_state", z((2, dirs, 4), f32)),
               Input("initial_cell_state", z((2, dirs, 4), f32)),
               Input("sequence_lengths", np.asarray(lengths, lengths_type)),
               Input("W", z((w_dirs or dirs, 16, 2), f32)), Input("R", z((w_dirs or dirs, 16, 4), f32)),
               Input("B", z((w_dirs or dirs, 16), f32))]
        attrs = {"hidden_size": 4, **({"direction": direction} if direction else {}), **extra}
        return ins, attrs

    cases = []
    for name, (ins, attrs), label in [
        ("length-past-end", lstm(lengths=(3, 4)), "sequence-lengths-range"),
        ("length-negative", lstm(lengths=(-1, 2)), "sequence-lengths-range"),
        ("length-type", lstm(lengths_type=np.float32), "sequence-lengths-type"),
        ("length-count", lstm(lengths=(3, 3, 3)), "recurrent-shape"),
        ("bidirectional-one-direction", lstm("bidirectional"), "recurrent-shape"),
        ("weights-directions", lstm("bidirectional", dirs=2, w_dirs=1), "recurrent-shape"),
        ("no-direction", lstm(None), "attributes"),
        ("bad-direction", lstm("sideways"), "attributes"),
        ("x-rank", lstm(x=(2, 3)), "recurrent-rank"),
        ("clip", lstm(clip=-0.5), "recurrent-clip"),
        ("activations", lstm(activations="sigmoid"), "recurrent-activations"),
    ]:
        cases.append(Case(f"LSTMSequence-error-{name}", "LSTMSequence", "opset5", ins, attrs, error=label))
    gru = [Input("X", z((2, 3, 2), f32)), Input("initial_hidden_state", z((2, 1, 4), f32)),
           Input("sequence_lengths", np.array([3, 3], np.int32)), Input("W", z((1, 12, 2), f32)),
           Input("R", z((1, 12, 4), f32)), Input("B", z((1, 12), f32))]
    cases.append(Case("GRUSequence-error-lbr-bias", "GRUSequence", "opset5", gru,
                      {"hidden_size": 4, "direction": "forward", "linear_before_reset": True}, error="recurrent-shape"))
    rnn = [Input("X", z((2, 3, 2), f32)), Input("H", z((2, 1, 4), f32)),
           Input("sequence_lengths", np.array([3, 3], np.int32)), Input("W", z((1, 4, 2), f32)),
           Input("R", z((1, 4, 4), f32)), Input("B", z((1, 4), f32))]
    cases.append(Case("RNNSequence-error-hidden-attr", "RNNSequence", "opset5", rnn,
                      {"hidden_size": 3, "direction": "forward"}, error="recurrent-shape"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_recurrent_sequence(case):
    harness.check(case, CASES)
