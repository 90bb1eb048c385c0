"""MVN-2 and MVN-6 against OpenVINO's CPU plugin and `oracles.normalization.mvn`.

Tolerance: within 4 ulps of the output type plus 2e-6 absolute in f32 (x - mean cancels where an
element lies near its slice's mean, and OpenVINO sums in another order); 2 ulps in the 16-bit
types (computed in f32, rounded once; 8 in bf16, where the plugin's answers stray by up to
5 ulps from the exact value). f64 is judged by the oracle alone (the plugin computes it
in f32).
"""

import harness
import numpy as np
import pytest
from harness import Case, Input
from helpers import element_dtypes
from oracles.normalization import mvn

FLOATS = element_dtypes("f32", "f16", "bf16", "f64")


def _values(rng, shape, dtype, edges):
    data = harness.values(rng, shape, dtype, edges=edges)
    return data


def _judge(tag, dtype):
    tol = {"f32": {"ulps": 4, "atol": 2e-6}, "f16": {"ulps": 2}, "bf16": {"ulps": 8}, "f64": {"ulps": 64}}[tag]
    if tag == "f64":
        return {**tol, "openvino": "none", "why": "the CPU plugin computes f64 in f32"}
    return tol


def _mvn6(tag, data, axes, normalize_variance, eps, eps_mode, **judge):
    inside = eps_mode == "inside_sqrt"
    return Case(f"mvn6-{tag}-{'x'.join(map(str, data.shape))}-ax{axes}-nv{int(normalize_variance)}-{eps_mode}-{eps}",
                "MVN", "opset6", [Input("data", data), Input("axes", np.array(axes, np.int64), const=True)],
                {"normalize_variance": normalize_variance, "eps": eps, "eps_mode": eps_mode},
                oracle=lambda x, a: mvn(x, a, normalize_variance=normalize_variance, eps=eps, inside_sqrt=inside),
                **judge)


def _mvn2(tag, data, attrs, **judge):
    rank = data.ndim
    if attrs.get("reduction_axes"):
        axes = attrs["reduction_axes"]
    else:
        axes = list(range(1 if attrs.get("across_channels") else 2, rank))
    nv, eps = attrs["normalize_variance"], attrs["eps"]
    name = "-".join(f"{k}{v}" for k, v in attrs.items())
    normalized = {a % rank for a in axes}
    if normalized not in ({*range(1, rank)}, {*range(2, rank)}) and judge.get("openvino", "cpu") == "cpu":
        judge = {**judge, "openvino": "none",
                 "why": "the CPU plugin reads only whether reduction_axes holds axis 1 (see mvn.py)"}
    return Case(f"mvn2-{tag}-{'x'.join(map(str, data.shape))}-{name}", "MVN", "opset2", [Input("data", data)], attrs,
                oracle=lambda x: mvn(x, axes, normalize_variance=nv, eps=eps), **judge)


def _cases():
    rng = np.random.default_rng(6)
    cases = []
    for tag, dtype in FLOATS.items():
        for k, shape in enumerate(harness.shapes(rng, ranks=(1, 2, 3, 4, 5))):
            rank = len(shape)
            axes = harness.random_axes(rng, rank)
            nv = bool(k % 2)
            for eps_mode in ("inside_sqrt", "outside_sqrt"):
                data = _values(rng, shape, dtype, edges=k % 3 == 0)
                cases.append(_mvn6(tag, data, axes, nv or eps_mode == "outside_sqrt", 1e-3 if k % 2 else 1e-9,
                                   eps_mode, **_judge(tag, dtype)))
        for k, shape in enumerate(harness.shapes(rng, ranks=(2, 3, 4, 5), zero=False)):
            attrs = [{"across_channels": True}, {"across_channels": False},
                     {"reduction_axes": [-1, 0]}, {"across_channels": False, "reduction_axes": [1, 2]}][k % 4]
            if attrs.get("reduction_axes") == [1, 2] and len(shape) < 3:
                attrs = {"reduction_axes": [1]}
            attrs = {**attrs, "normalize_variance": bool(k % 2 == 0 or tag == "bf16"), "eps": 1e-6}
            cases.append(_mvn2(tag, _values(rng, shape, dtype, edges=False), attrs, **_judge(tag, dtype)))
    # the axes fixed by across_channels on a rank-2 tensor: none when false (each element alone)
    x = np.array([[1, 2, 3], [4, 5, -6]], np.float32)
    cases.append(_mvn2("f32", x, {"across_channels": False, "normalize_variance": True, "eps": 1e-9},
                       openvino="none", why="the CPU plugin cannot reduce over no axes"))
    cases.append(_mvn6("f32", x, [1, 1], True, 1e-9, "inside_sqrt", ulps=4))  # an axis named twice counts once
    # refusals
    cases += [
        Case("mvn2-noaxes-attrs", "MVN", "opset2", [Input("data", x)], {"normalize_variance": True, "eps": 1e-9},
             error="mvn-axes"),
        Case("mvn2-i32", "MVN", "opset2", [Input("data", x.astype(np.int32))],
             {"across_channels": True, "normalize_variance": True, "eps": 1e-9}, error="float-type"),
        Case("mvn2-axis-range", "MVN", "opset2", [Input("data", x)],
             {"reduction_axes": [2], "normalize_variance": True, "eps": 1e-9}, error="axis-range"),
        Case("mvn2-axes-unique", "MVN", "opset2", [Input("data", x)],
             {"reduction_axes": [1, -1], "normalize_variance": True, "eps": 1e-9}, error="axes-unique"),
        Case("mvn2-eps-missing", "MVN", "opset2", [Input("data", x)],
             {"across_channels": True, "normalize_variance": True}, error="attributes"),
    ]
    attrs6 = {"normalize_variance": True, "eps": 1e-9, "eps_mode": "inside_sqrt"}
    for name, axes, label in (("axes-i8", np.array([1], np.int8), "axes-type"), ("axes-2d", np.array([[1]]), "axes-vector"),
                              ("axes-scalar", np.array(1), "axes-vector"), ("axes-count", np.array([0, 1, 1]), "axes-count"),
                              ("axis-range", np.array([2]), "axis-range")):
        cases.append(Case(f"mvn6-{name}", "MVN", "opset6", [Input("data", x), Input("axes", axes, const=True)], attrs6,
                          error=label))
    cases.append(Case("mvn6-f16-i32", "MVN", "opset6", [Input("data", x.astype(np.int32)),
                      Input("axes", np.array([1]), const=True)], attrs6, error="float-type"))
    cases.append(Case("mvn6-eps-mode", "MVN", "opset6", [Input("data", x), Input("axes", np.array([1]), const=True)],
                      {**attrs6, "eps_mode": "somewhere"}, error="attributes"))
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_mvn(case):
    harness.check(case, CASES)
