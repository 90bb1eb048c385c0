"""BatchNormInference-1/-5 and GroupNormalization-12 against OpenVINO's CPU plugin and
`oracles.normalization`.

Tolerance: within 4 ulps of the output type plus 1e-6 absolute in f32 (x - mean cancels near the
mean, gamma * x + beta near zero), 2 ulps plus 1e-3 absolute in f16 and 2 ulps plus 1e-2 in bf16
(the plugin rounds some intermediates to the 16-bit type); f64 is judged by the oracle alone (the
plugin computes it in f32). BatchNormInference-1 takes gamma and beta before the data, as OpenVINO
does (see batch_norm_inference.py).
"""

import harness
import numpy as np
import pytest
from harness import Case, Input, named_inputs
from helpers import element_dtypes
from oracles.normalization import batch_norm, group_norm

FLOATS = element_dtypes("f32", "f16", "bf16", "f64")
TOL = {"f32": {"ulps": 4, "atol": 1e-6}, "f16": {"ulps": 2, "atol": 1e-3}, "bf16": {"ulps": 2, "atol": 1e-2},
       "f64": {"ulps": 64, "openvino": "none", "why": "the CPU plugin computes f64 in f32"}}


def _values(rng, shape, dtype, edges=False, low=-4, high=4):
    data = harness.values(rng, shape, dtype, edges=edges, low=low, high=high)
    return data


def _bn(version, tag, data, gamma, beta, mean, variance, epsilon, **judge):
    ordered = {"data": data, "gamma": gamma, "beta": beta, "mean": mean, "variance": variance}
    names = ("gamma", "beta", "data", "mean", "variance") if version == 1 else tuple(ordered)
    inputs = [Input(n, ordered[n]) for n in names]

    def oracle(*arrays):
        a = dict(zip(names, arrays))
        return batch_norm(a["data"], a["gamma"], a["beta"], a["mean"], a["variance"], epsilon=epsilon)

    return Case(f"bn{version}-{tag}-{'x'.join(map(str, data.shape))}-eps{epsilon}", "BatchNormInference",
                f"opset{version}", inputs, {"epsilon": epsilon}, oracle=oracle, **judge)


def _gn(tag, data, scale, bias, groups, epsilon, **judge):
    if tag == "bf16":
        judge = {**judge, "openvino": "none", "why": "the CPU plugin has no bf16 GroupNormalization"}
    return Case(f"gn-{tag}-{'x'.join(map(str, data.shape))}-g{groups}-eps{epsilon}", "GroupNormalization", "opset12",
                [Input("data", data), Input("scale", scale), Input("bias", bias)],
                {"num_groups": groups, "epsilon": epsilon},
                oracle=lambda x, s, b: group_norm(x, s, b, num_groups=groups, epsilon=epsilon), **judge)


def _cases():
    rng = np.random.default_rng(5)
    cases = []
    for tag, dtype in FLOATS.items():
        for k, shape in enumerate(harness.shapes(rng, ranks=(2, 3, 4, 5))):
            shape = (shape[0], max(shape[1], 1)) + shape[2:]  # at least one channel
            c = shape[1]
            per_channel = [_values(rng, (c,), dtype) for _ in range(3)] + [_values(rng, (c,), dtype, low=0, high=3)]
            data = _values(rng, shape, dtype, edges=k % 2 == 0)
            for version in (1, 5):
                cases.append(_bn(version, tag, data, *per_channel, [1e-5, 0.0, 0.5][k % 3], **TOL[tag]))
        for k, (shape, groups) in enumerate([((2, 4, 3), 2), ((1, 6, 2, 2), 3), ((3, 4), 4), ((2, 4, 2, 1, 2), 1),
                                            ((1, 3, 5, 5), 3), ((0, 4, 2), 2), ((2, 2, 0), 1)]):
            data = _values(rng, shape, dtype, edges=k == 1)
            scale, bias = _values(rng, (shape[1],), dtype), _values(rng, (shape[1],), dtype)
            cases.append(_gn(tag, data, scale, bias, groups, [1e-5, 1e-2][k % 2], **TOL[tag]))
    # refusals
    x, c = np.ones((2, 3), np.float32), np.ones(3, np.float32)
    for version in (1, 5):
        for name, args, attrs, label in (
                ("i32", (x.astype(np.int32),) + (c.astype(np.int32),) * 4, {"epsilon": 1e-5}, "float-type"),
                ("mixed", (x, c.astype(np.float16), c, c, c), {"epsilon": 1e-5}, "same-element-type"),
                ("rank1", (c, c, c, c, c), {"epsilon": 1e-5}, "data-rank"),
                ("gamma-len", (x, np.ones(2, np.float32), c, c, c), {"epsilon": 1e-5}, "channel-shape"),
                ("var-2d", (x, c, c, c, np.ones((3, 1), np.float32)), {"epsilon": 1e-5}, "channel-shape"),
                ("no-channels", (np.ones((2, 0), np.float32),) + (np.ones(0, np.float32),) * 4, {"epsilon": 1e-5},
                 "channel-count"),
                ("eps-negative", (x, c, c, c, c), {"epsilon": -1e-5}, "epsilon-range")):
            ordered = dict(zip(("data", "gamma", "beta", "mean", "variance"), args))
            names = ("gamma", "beta", "data", "mean", "variance") if version == 1 else tuple(ordered)
            cases.append(Case(f"bn{version}-{name}", "BatchNormInference", f"opset{version}",
                              [Input(n, ordered[n]) for n in names], attrs, error=label))
    g = {"num_groups": 2, "epsilon": 1e-5}
    x4, c4 = np.ones((2, 4, 3), np.float32), np.ones(4, np.float32)
    for name, args, attrs, label in (
            ("i32", (x4.astype(np.int32), c4.astype(np.int32), c4.astype(np.int32)), g, "float-type"),
            ("mixed", (x4, c4.astype(np.float16), c4), g, "same-element-type"),
            ("rank1", (c4, c4, c4), g, "data-rank"),
            ("scale-len", (x4, np.ones(3, np.float32), c4), g, "channel-shape"),
            ("bias-2d", (x4, c4, np.ones((4, 1), np.float32)), g, "channel-shape"),
            ("groups-0", (x4, c4, c4), {**g, "num_groups": 0}, "group-count"),
            ("groups-5", (x4, c4, c4), {**g, "num_groups": 5}, "group-count"),
            ("groups-3", (x4, c4, c4), {**g, "num_groups": 3}, "group-divide")):
        cases.append(Case(f"gn-{name}", "GroupNormalization", "opset12",
                          named_inputs(("data", "scale", "bias"), args), attrs, error=label))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_normalization_batch_group(case):
    harness.check(case, CASES)


def test_batch_norm_keeps_derived_values_only_for_read_only_statistics():
    from helpers import layer, port

    from irscatter import parse_layer
    from irscatter.ops.normalization.batch_norm_inference import BatchNormInference5
    snippet = layer(0, "bn", "BatchNormInference", "opset5", {"epsilon": "0"},
                    inputs=[port(i, None, [1, 2] if i == 0 else [2]) for i in range(5)],
                    outputs=[port(5, None, [1, 2])])
    op = BatchNormInference5(parse_layer(snippet))
    x = np.array([[1.0, 2.0]], np.float32)
    gamma, beta, mean, var = (np.array(v, np.float32) for v in ([1, 1], [0, 0], [0, 0], [1, 1]))
    np.testing.assert_array_equal(op.compute(x, gamma, beta, mean, var), [[1, 2]])
    gamma[:] = 3  # writable statistics may change between runs: read again
    np.testing.assert_array_equal(op.compute(x, gamma, beta, mean, var), [[3, 6]])
    frozen = [a.copy() for a in (gamma, beta, mean, var)]
    for a in frozen:
        a.flags.writeable = False  # a Const's value: the same read-only array every run
    first = op.compute(x, *frozen)
    np.testing.assert_array_equal(op.compute(x, *frozen), first)
    np.testing.assert_array_equal(op.compute(x * 2, *frozen), [[6, 12]])
    assert x.tolist() == [[1.0, 2.0]]  # the data is never written


@pytest.mark.parametrize("dtype", list(FLOATS.values()), ids=list(FLOATS))
@pytest.mark.parametrize("shape, groups", [((1, 512, 40), 512), ((2, 64, 9, 9), 8), ((3, 6), 3), ((2, 4, 2, 3, 5), 4),
                                           ((1, 6, 7), 1), ((0, 4, 3), 2), ((2, 4, 0), 2)])
def test_group_normalization_in_parts_has_the_bits_of_one_call(monkeypatch, dtype, shape, groups):
    """numpy's path (a layer's first call) on the thread policy's parts, each a range of the
    samples' groups: the bits of the whole array in one call, edge values included; the inputs
    are not written."""
    from helpers import layer, port

    from irscatter import parse_layer
    from irscatter.ops.common import accel, threads
    from irscatter.ops.normalization.group_normalization import GroupNormalization

    snippet = layer(0, "gn", "GroupNormalization", "opset12", {"num_groups": str(groups), "epsilon": "1e-5"},
                    inputs=[port(0, None, list(shape)), port(1, None, [shape[1]]), port(2, None, [shape[1]])],
                    outputs=[port(3, None, list(shape))])
    rng = np.random.default_rng(len(shape) * groups)
    data = _values(rng, shape, dtype, edges=True)
    scale, bias = _values(rng, (shape[1],), dtype), _values(rng, (shape[1],), dtype)
    kept = [a.copy() for a in (data, scale, bias)]
    with accel.use("numpy"):
        monkeypatch.setattr(threads, "_policy", "one")
        whole = GroupNormalization(parse_layer(snippet)).compute(data, scale, bias)
        monkeypatch.setattr(threads, "_policy", "split")
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(threads, "CORES", 3)
        handed, run = [], threads.run
        monkeypatch.setattr(threads, "run", lambda tasks: handed.append(len(tasks)) or run(tasks))
        parts = GroupNormalization(parse_layer(snippet)).compute(data, scale, bias)
    assert handed == ([min(3, shape[0] * groups)] if data.size and shape[0] * groups > 1 else [])
    assert parts.dtype == whole.dtype and parts.shape == whole.shape == shape
    assert parts.tobytes() == whole.tobytes()
    assert all(a.tobytes() == b.tobytes() for a, b in zip((data, scale, bias), kept))
