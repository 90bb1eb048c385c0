"""Generate the control-flow and model-state test models under `tests/data/control/` with the
OpenVINO Python API: Loops (sliced, counted, while, growing back edges, zero iterations),
TensorIterators (forward, reverse, parts of two), Ifs (constant and fed conditions, branches of
different shapes, a Loop nested in a branch) and stateful models (ReadValue/Assign).

Each model is `<name>.xml` + `<name>.bin` and `<name>.npz` with its feeds; a stateful model's
feeds are for several steps (`step0/x`, `step1/x`, ...). The expected values are not stored:
the tests compute them with OpenVINO (out of process) and with numpy. Run from the repository
root:

    python tools/make_control_models.py [--out tests/data/control]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import openvino as ov
import openvino.opset8 as o
from openvino import op

RNG = np.random.default_rng(16)
MODELS = {}


def model(fn):
    MODELS[fn.__name__] = fn
    return fn


def _loop(trip, cond, body: ov.Model, counter: int = -1, condition: int = 0):
    loop = o.loop(trip, cond)
    loop.set_function(body)
    loop.set_special_body_ports([counter, condition])
    return loop


@model
def loop_scan():
    """Sliced rows, a running sum weighted by the iteration number, stopping when it reaches 3."""
    xi = o.parameter([1, 4], np.float32, name="xi")
    acc = o.parameter([1, 4], np.float32, name="acc")
    it = o.parameter([], np.int64, name="it")
    new = o.add(acc, o.multiply(xi, o.convert(it, "f32")))
    go = o.less(it, o.constant(np.int64(3)))
    body = ov.Model([o.result(go), o.result(new), o.result(new)], [xi, acc, it], "body")
    x = o.parameter([5, 4], np.float32, name="x")
    a0 = o.parameter([1, 4], np.float32, name="a0")
    loop = _loop(o.constant(np.int64(10)), o.constant(True), body, counter=2, condition=0)
    loop.set_sliced_input(xi, x.output(0), 0, 1, 1, -1, 0)
    loop.set_merged_input(acc, a0.output(0), body.get_results()[1].output(0))
    last = loop.get_iter_value(body.get_results()[1].output(0), -1)
    joined = loop.get_concatenated_slices(body.get_results()[2].output(0), 0, 1, 1, -1, 0)
    m = ov.Model([o.result(last), o.result(joined)], [x, a0], "loop_scan")
    return m, {"x": RNG.standard_normal((5, 4)).astype(np.float32), "a0": np.ones((1, 4), np.float32)}


@model
def loop_while():
    """Doubling until the value reaches a bound fed at run time; the trip count is fed too."""
    v = o.parameter([3], np.float32, name="v")
    bound = o.parameter([], np.float32, name="bound")
    new = o.multiply(v, o.constant(np.float32(2)))
    go = o.less(o.reduce_max(new, o.constant(np.int64(0))), bound)
    body = ov.Model([o.result(go), o.result(new), o.result(o.reduce_sum(new, o.constant(np.int64(0))))],
                    [v, bound], "body")
    trip = o.parameter([], np.int64, name="trip")
    cond = o.parameter([], np.bool_, name="cond")
    v0 = o.parameter([3], np.float32, name="v0")
    limit = o.parameter([], np.float32, name="limit")
    loop = _loop(trip, cond, body, condition=0)
    loop.set_merged_input(v, v0.output(0), body.get_results()[1].output(0))
    loop.set_invariant_input(bound, limit.output(0))
    last = loop.get_iter_value(body.get_results()[1].output(0), -1)
    sums = loop.get_concatenated_slices(body.get_results()[2].output(0), 0, 1, 1, -1, 0)
    m = ov.Model([o.result(last), o.result(sums)], [trip, cond, v0, limit], "loop_while")
    return m, {"trip": np.int64(-1), "cond": np.bool_(True), "v0": np.array([0.5, 1.0, 0.25], np.float32),
               "limit": np.float32(100.0)}


@model
def loop_growing():
    """A back edge whose value grows by one column each iteration (its shape is not fixed)."""
    s = o.parameter([2, -1], np.float32, name="s")
    col = o.parameter([2, 1], np.float32, name="col")
    new = o.concat([s, o.multiply(col, o.constant(np.float32(1.5)))], 1)
    body = ov.Model([o.result(o.constant(True)), o.result(new)], [s, col], "body")
    s0 = o.parameter([2, 1], np.float32, name="s0")
    c = o.parameter([2, 1], np.float32, name="c")
    loop = _loop(o.constant(np.int64(4)), o.constant(True), body, condition=0)
    loop.set_merged_input(s, s0.output(0), body.get_results()[1].output(0))
    loop.set_invariant_input(col, c.output(0))
    last = loop.get_iter_value(body.get_results()[1].output(0), -1)
    m = ov.Model([o.result(last)], [s0, c], "loop_growing")
    return m, {"s0": RNG.standard_normal((2, 1)).astype(np.float32), "c": RNG.standard_normal((2, 1)).astype(np.float32)}


@model
def loop_fails_at_3():
    """Reshapes a 6-vector to (i + 1, -1) in iteration i: the fourth iteration cannot (6 is not a
    multiple of 4), so the run fails there; used to test what the error says."""
    v = o.parameter([6], np.float32, name="v")
    it = o.parameter([1], np.int64, name="it")
    target = o.concat([o.add(it, o.constant(np.int64([1]))), o.constant(np.int64([-1]))], 0)
    total = o.reduce_sum(o.reshape(v, target, False), o.constant(np.int64([0, 1])))
    body = ov.Model([o.result(o.constant(True)), o.result(total)], [v, it], "body")
    x = o.parameter([6], np.float32, name="x")
    loop = _loop(o.constant(np.int64(5)), o.constant(True), body, counter=1, condition=0)
    loop.set_invariant_input(v, x.output(0))
    sums = loop.get_concatenated_slices(body.get_results()[1].output(0), 0, 1, 1, -1, 0)
    return ov.Model([o.result(sums)], [x], "loop_fails_at_3"), {"x": np.arange(6, dtype=np.float32)}


def _rnn_body(features: int, hidden: int, seed: int):
    rng = np.random.default_rng(seed)
    xt = o.parameter([2, 1, features], np.float32, name="xt")
    h = o.parameter([2, hidden], np.float32, name="h")
    w = o.constant((rng.standard_normal((features, hidden)) * 0.5).astype(np.float32))
    u = o.constant((rng.standard_normal((hidden, hidden)) * 0.5).astype(np.float32))
    x2 = o.squeeze(xt, o.constant(np.int64([1])))
    new = o.tanh(o.add(o.matmul(x2, w, False, False), o.matmul(h, u, False, False)))
    seq = o.unsqueeze(new, o.constant(np.int64([1])))
    return ov.Model([o.result(new), o.result(seq)], [xt, h], "body")


def _ti(reverse: bool, name: str):
    body = _rnn_body(3, 4, 7)
    xt, h = body.get_parameters()
    x = o.parameter([2, 5, 3], np.float32, name="x")
    h0 = o.parameter([2, 4], np.float32, name="h0")
    ti = o.tensor_iterator()
    ti.set_body(body)
    if reverse:
        ti.set_sliced_input(xt, x.output(0), -1, -1, 1, 0, 1)
    else:
        ti.set_sliced_input(xt, x.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(h, h0.output(0), body.get_results()[0].output(0))
    last = ti.get_iter_value(body.get_results()[0].output(0), -1)
    if reverse:
        seq = ti.get_concatenated_slices(body.get_results()[1].output(0), -1, -1, 1, 0, 1)
    else:
        seq = ti.get_concatenated_slices(body.get_results()[1].output(0), 0, 1, 1, -1, 1)
    m = ov.Model([o.result(last), o.result(seq)], [x, h0], name)
    return m, {"x": RNG.standard_normal((2, 5, 3)).astype(np.float32), "h0": np.zeros((2, 4), np.float32)}


@model
def ti_forward():
    """A tanh RNN over 5 time steps, as a converter writes it with TensorIterator."""
    return _ti(False, "ti_forward")


@model
def ti_reverse():
    """The same RNN run backwards in time (stride -1), its sequence output joined in input order."""
    return _ti(True, "ti_reverse")


@model
def ti_pairs():
    """Parts of two rows (part_size 2): a running product over pairs of rows."""
    xt = o.parameter([2, 3], np.float32, name="xt")
    acc = o.parameter([2, 3], np.float32, name="acc")
    new = o.multiply(acc, xt)
    body = ov.Model([o.result(new), o.result(new)], [xt, acc], "body")
    x = o.parameter([6, 3], np.float32, name="x")
    a0 = o.parameter([2, 3], np.float32, name="a0")
    ti = o.tensor_iterator()
    ti.set_body(body)
    ti.set_sliced_input(xt, x.output(0), 0, 2, 2, -1, 0)
    ti.set_merged_input(acc, a0.output(0), body.get_results()[0].output(0))
    last = ti.get_iter_value(body.get_results()[0].output(0), -1)
    seq = ti.get_concatenated_slices(body.get_results()[1].output(0), 0, 2, 2, -1, 0)
    m = ov.Model([o.result(last), o.result(seq)], [x, a0], "ti_pairs")
    return m, {"x": RNG.uniform(0.5, 1.5, (6, 3)).astype(np.float32), "a0": np.ones((2, 3), np.float32)}


def _branches(x, y):
    tx = o.parameter([2, 3], np.float32, name="tx")
    ty = o.parameter([2, 3], np.float32, name="ty")
    then_body = ov.Model([o.result(o.add(o.multiply(tx, o.constant(np.float32(2))), ty))], [tx, ty], "then")
    ex = o.parameter([2, 3], np.float32, name="ex")
    else_body = ov.Model([o.result(o.reshape(o.subtract(ex, o.constant(np.float32(1))),
                                             o.constant(np.int64([3, 2])), False))], [ex], "else")
    return then_body, else_body


@model
def if_fed():
    """The condition is fed; the branches give [2, 3] and [3, 2] (the output shape is dynamic)."""
    cond = o.parameter([], np.bool_, name="cond")
    x = o.parameter([2, 3], np.float32, name="x")
    y = o.parameter([2, 3], np.float32, name="y")
    then_body, else_body = _branches(x, y)
    node = o.if_op(cond)
    node.set_then_body(then_body)
    node.set_else_body(else_body)
    node.set_input(x.output(0), then_body.get_parameters()[0], else_body.get_parameters()[0])
    node.set_input(y.output(0), then_body.get_parameters()[1], None)
    out = node.set_output(then_body.get_results()[0], else_body.get_results()[0])
    m = ov.Model([o.result(out)], [cond, x, y], "if_fed")
    return m, {"cond": np.bool_(False), "x": RNG.standard_normal((2, 3)).astype(np.float32),
               "y": RNG.standard_normal((2, 3)).astype(np.float32)}


@model
def if_loop_inside():
    """An If whose then-branch holds a Loop: bodies nest."""
    inner_v = o.parameter([3], np.float32, name="inner_v")
    body = ov.Model([o.result(o.constant(True)), o.result(o.add(inner_v, o.constant(np.float32(1))))], [inner_v],
                    "loop_body")
    tv = o.parameter([3], np.float32, name="tv")
    loop = _loop(o.constant(np.int64(3)), o.constant(True), body, condition=0)
    loop.set_merged_input(inner_v, tv.output(0), body.get_results()[1].output(0))
    then_body = ov.Model([o.result(loop.get_iter_value(body.get_results()[1].output(0), -1))], [tv], "then")
    ev = o.parameter([3], np.float32, name="ev")
    else_body = ov.Model([o.result(o.negative(ev))], [ev], "else")
    cond = o.parameter([], np.bool_, name="cond")
    x = o.parameter([3], np.float32, name="x")
    node = o.if_op(cond)
    node.set_then_body(then_body)
    node.set_else_body(else_body)
    node.set_input(x.output(0), tv, ev)
    out = node.set_output(then_body.get_results()[0], else_body.get_results()[0])
    m = ov.Model([o.result(out)], [cond, x], "if_loop_inside")
    return m, {"cond": np.bool_(True), "x": np.array([1.0, -2.0, 0.5], np.float32)}


def _variable(name: str, shape, etype=ov.Type.f32):
    info = op.util.VariableInfo()
    info.data_shape = ov.PartialShape(shape)
    info.data_type = etype
    info.variable_id = name
    return op.util.Variable(info)


@model
def state_cache():
    """A KV-cache in miniature: each step appends its input to a variable (ReadValue-6 whose
    initial value is computed from the input) and returns the cache's running mean."""
    import openvino.opset6 as o6

    x = o.parameter([1, 2, -1], np.float32, name="x")
    cache = _variable("cache", [1, 2, -1])
    batch = o.gather(o.shape_of(x), o.constant(np.int64([0])), o.constant(np.int64(0)))
    target = o.concat([batch, o.constant(np.int64([2, 0]))], 0)
    init = o.broadcast(o.constant(np.float32(0)), target)
    read = o6.read_value(init, cache)
    joined = o.concat([read, x], 2)
    assign = o6.assign(joined, cache)
    mean = o.reduce_mean(joined, o.constant(np.int64([2])), True)
    m = ov.Model([o.result(mean), o.result(joined)], [assign], [x], "state_cache")
    steps = {f"step{k}/x": RNG.standard_normal((1, 2, k + 1)).astype(np.float32) for k in range(3)}
    return m, steps


@model
def state_counter():
    """ReadValue-6 with no initial value (zeros), and a second variable of another type."""
    import openvino.opset6 as o6

    x = o.parameter([2], np.float32, name="x")
    total = _variable("total", [2])
    count = _variable("count", [], ov.Type.i32)
    t = o6.read_value(total)
    n = o6.read_value(count)
    new_t = o.add(t, x)
    new_n = o.add(n, o.constant(np.int32(1)))
    a1 = o6.assign(new_t, total)
    a2 = o6.assign(new_n, count)
    avg = o.divide(new_t, o.convert(new_n, "f32"))
    m = ov.Model([o.result(avg)], [a1, a2], [x], "state_counter")
    steps = {f"step{k}/x": RNG.standard_normal(2).astype(np.float32) for k in range(4)}
    return m, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="tests/data/control")
    parser.add_argument("names", nargs="*", help="only these models")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, make in MODELS.items():
        if args.names and name not in args.names:
            continue
        m, feeds = make()
        ov.save_model(m, str(out / f"{name}.xml"), compress_to_fp16=False)
        np.savez(out / f"{name}.npz", **feeds)
        print(f"wrote {out / name}.xml")


if __name__ == "__main__":
    main()
