"""The differential harness: an op test is a list of case records, and this module runs them.

A `Case` says what one layer computes: its type and opset, its inputs (each a Parameter fed at
run time or a Const in the weights), its attributes, the op's oracle and how close the answers
must be. `check(case, batch)` then

1. runs the layer through irscatter as users do (an IR file: loader, inference, interpreter);
2. compares it with OpenVINO's CPU plugin at f32 inference precision, out of process; the cases
   of one `batch` go into one IR file (one layer each, side by side), so OpenVINO compiles once
   per batch rather than once per case. Should the plugin crash or answer unstably on the batch,
   each case is run alone, falling back to OpenVINO's core reference (`helpers.run_ov`);
3. compares it with the case's oracle (`tests/oracles`), when it has one.

`openvino="reference"` compares with the core reference instead of the plugin and
`openvino="none"` with the oracle only; `why` says why the plugin is not the judge there.
`error="label"` makes a case that irscatter must refuse with that label.

A new op adds a record generator (a function returning cases) to the test module of its
family, and one parametrized test: `check(case, CASES)`.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import irscatter
from irscatter.ir.writer import IRWriter
from irscatter.ops import registry
from irscatter.ops.base import TensorInfo
from irscatter.ops.functional import attr_text, call, make_op


@dataclass
class Input:
    name: str
    value: np.ndarray
    const: bool = False  # a Const layer with the value in the weights, instead of a Parameter


@dataclass
class Case:
    id: str
    type: str
    opset: str
    inputs: list[Input]
    attrs: dict[str, Any] = field(default_factory=dict)
    oracle: Callable[..., Any] | None = None  # oracle(*input arrays) -> one array or a tuple
    openvino: str = "cpu"  # "cpu", "reference" (OpenVINO's core reference) or "none"
    why: str = ""  # why OpenVINO's CPU plugin is not the judge of this case
    ulps: float = 0  # float tolerance, in units of the last place of the output type
    atol: float = 0  # an absolute tolerance on top (for results near 0 that cancel)
    error: str | None = None  # the label irscatter must refuse the case with
    # Why the CPU plugin computes this case otherwise without AVX-512 (its kernels for AVX2 take
    # another path); there the oracle alone judges it (the core reference has no kernel for most).
    avx512_path: str = ""

    def __str__(self) -> str:
        return self.id

    @property
    def op(self):
        cls = registry.find(self.type, self.opset)
        assert cls is not None, f"{self.type} {self.opset} is not registered"
        return cls


def named_inputs(names: Sequence[str], arrays: Sequence[np.ndarray], *,
                 const: bool | Collection[str] = False) -> list[Input]:
    """A case's inputs from its input names and arrays, in order: Consts where `const` is True,
    or those named in it, Parameters otherwise."""
    return [Input(n, a, const=const is True or (not isinstance(const, bool) and n in const))
            for n, a in zip(names, arrays)]


# --- writing the IR ----------------------------------------------------------------------------


def _etype(array: np.ndarray) -> irscatter.ElementType:
    return irscatter.ElementType.from_dtype(array.dtype)


def expected_outputs(case: Case) -> list[tuple[tuple[int, ...], irscatter.ElementType]]:
    """The output shapes and types irscatter infers for the case (declared in the IR's ports)."""
    op = make_op(case.op, case.attrs)
    infos = op.infer(*(TensorInfo.of(i.value) for i in case.inputs))
    infos = infos if isinstance(infos, tuple) else (infos,)
    return [(info.shape.to_tuple(), info.etype) for info in infos]


class _Writer:
    """Cases side by side in one IR file, each its layer, inputs and Results, names prefixed."""

    def __init__(self) -> None:
        self.ir = IRWriter("cases")

    def add(self, case: Case, prefix: str) -> tuple[list[str], int]:
        """The case's layer with its inputs and Results; returns its Parameter names and output count."""
        sources, types, params = [], [], []
        for i in case.inputs:
            name, etype = f"{prefix}{i.name}", _etype(i.value)
            if i.const:
                sources.append(self.ir.const(name, i.value, etype))
            else:
                params.append(name)
                sources.append(self.ir.parameter(name, etype, i.value.shape, (name,)))
            types.append((etype, i.value.shape))
        outputs = expected_outputs(case)
        attrs = {k: attr_text(v) for k, v in case.attrs.items() if v is not None}
        tensors = self.ir.layer(case.type, case.opset, sources, types, [(et, shape) for shape, et in outputs],
                                name=f"{prefix}layer", attrs=attrs)
        for k, (tensor, (shape, et)) in enumerate(zip(tensors, outputs)):
            self.ir.result(f"{prefix}out{k}", tensor, et, shape)
        return params, len(outputs)

    def save(self, folder: Path) -> Path:
        return self.ir.save(folder / "cases.xml")


def _feeds(case: Case, prefix: str) -> dict[str, np.ndarray]:
    return {f"{prefix}{i.name}": i.value for i in case.inputs if not i.const}


def save_ir(case: Case, folder: Path) -> tuple[Path, list[np.ndarray]]:
    """The case as an IR file in `folder` (its Const inputs in the weights beside it), and the
    arrays its Parameters are fed, in their order: for runners other than `check` (the internal
    ops OpenVINO reads only once its CPU plugin is loaded, `helpers.run_internal_ops_openvino`)."""
    writer = _Writer()
    writer.add(case, "")
    return writer.save(folder), list(_feeds(case, "").values())


# --- running ----------------------------------------------------------------------------------


def run_irscatter(case: Case) -> list[np.ndarray]:
    """The case as an IR file through irscatter's loader, inference and interpreter."""
    writer = _Writer()
    writer.add(case, "")
    model = irscatter.parse_model(*writer.ir.to_bytes())
    return list(model.run(_feeds(case, "")).values())


# id(batch) -> (the batch, its answers by case id); holding the batch keeps its id from being reused
_BATCHES: dict[int, tuple[Sequence[Case], dict[str, list[np.ndarray]]]] = {}


def run_openvino(case: Case, batch: Sequence[Case]) -> list[np.ndarray]:
    """OpenVINO's answer for `case`, computed for the whole `batch` at once on first use."""
    from helpers import oracle, run_ov

    from irscatter.targets import TargetFailure

    if judge(case) == "reference":
        with tempfile.TemporaryDirectory() as folder:
            writer = _Writer()
            writer.add(case, "")
            return oracle().evaluate(writer.save(Path(folder)), _feeds(case, ""))
    known = _BATCHES.get(id(batch))
    answers = known[1] if known is not None and known[0] is batch else None
    if answers is None:
        answers = {}
        _BATCHES[id(batch)] = (batch, answers)
        members = [c for c in batch if judge(c) == "cpu" and c.error is None]
        with tempfile.TemporaryDirectory() as folder:
            writer, counts, feeds = _Writer(), [], {}
            for n, c in enumerate(members):
                _, count = writer.add(c, f"c{n}_")
                counts.append(count)
                feeds.update(_feeds(c, f"c{n}_"))
            try:
                outputs = oracle().infer(writer.save(Path(folder)), feeds, config={"INFERENCE_PRECISION_HINT": "f32"})
            except TargetFailure:
                outputs = None  # each case alone, with the fallbacks of run_ov
            if outputs is not None:
                start = 0
                for c, count in zip(members, counts):
                    answers[c.id] = outputs[start:start + count]
                    start += count
    if case.id in answers:
        return answers[case.id]
    with tempfile.TemporaryDirectory() as folder:
        writer = _Writer()
        writer.add(case, "")
        return run_ov(writer.save(Path(folder)), _feeds(case, ""),
                      fallback=(lambda: _oracle_outputs(case)) if case.oracle else None)


def judge(case: Case) -> str:
    """Which answer judges `case` on this CPU: the CPU plugin ("cpu"), OpenVINO's core reference
    ("reference") or the oracle alone ("none"). A case whose plugin kernel differs without AVX-512
    (`avx512_path`) is the oracle's alone on such a CPU.

    Without AVX-512 the CPU plugin has no bf16 arithmetic: it computes a bf16 layer in f32 and
    rounds the result to bf16 its own way (some kernels cut, where the AVX-512 ones round to
    nearest), and OpenVINO's core reference evaluates few ops in bf16 at all. There a bf16 case
    is held to the plugin within one more bf16 ulp, and the ops whose plugin path departs
    further (`_BF16_PATH_DIFFERS`) to their oracle alone; `harness_notes` says so in the summary."""
    from helpers import plugin_capabilities, plugin_has_avx512, record_note

    if case.openvino == "cpu" and case.avx512_path and not plugin_has_avx512():
        record_note("avx2-by-oracle", case.id)
        return "none"
    if case.openvino != "cpu" or not _holds_bf16(case) or "BF16" in plugin_capabilities():
        return case.openvino
    if case.type in _BF16_PATH_DIFFERS and case.oracle is not None:
        record_note("bf16-by-oracle", case.id)
        return "none"
    record_note("bf16-rounded", case.id)
    return "cpu"


# Ops whose bf16 path in the CPU plugin without AVX-512 departs by more than its rounding:
# attention (a fully masked row comes out finite) and the f8 round trip of FakeConvert (one bf16
# ulp on the way in moves a value across an f8 step).
_BF16_PATH_DIFFERS = frozenset({"ScaledDotProductAttention", "FakeConvert"})
def _plugin_has_bf16() -> bool:
    from helpers import plugin_capabilities

    return "BF16" in plugin_capabilities()


def _holds_bf16(case: Case) -> bool:
    return any(i.value.dtype == ml_dtypes.bfloat16 for i in case.inputs) or \
        any(v == "bf16" for v in case.attrs.values() if isinstance(v, str))


def harness_notes(cases: dict[str, set[str]]) -> list[str]:
    """The summary lines of the CPU-dependent choices the harness made in this run, from the case
    ids `judge` recorded under each choice."""
    why = "this CPU has no bf16 arithmetic (the plugin's OPTIMIZATION_CAPABILITIES lack BF16)"
    lines = []
    if cases.get("bf16-rounded"):
        lines.append(f"{len(cases['bf16-rounded'])} bf16 cases held to OpenVINO's CPU plugin within one more bf16 "
                     f"ulp: {why}")
    if cases.get("bf16-by-oracle"):
        lines.append(f"{len(cases['bf16-by-oracle'])} bf16 cases of {', '.join(sorted(_BF16_PATH_DIFFERS))} held to "
                     f"their oracle alone: {why}, and the plugin's path there departs further")
    avx2 = sorted(cases.get("avx2-by-oracle", ()))
    if avx2:
        lines.append(f"{len(avx2)} cases whose CPU-plugin kernel differs without AVX-512 held to their oracle alone: "
                     f"this CPU has no AVX-512 ({', '.join(avx2[:4])}{', ...' if len(avx2) > 4 else ''})")
    return lines


def _oracle_outputs(case: Case) -> list[np.ndarray]:
    out = case.oracle(*(i.value for i in case.inputs))
    return list(out) if isinstance(out, (tuple, list)) else [out]


# --- comparing --------------------------------------------------------------------------------


def assert_close(got: np.ndarray, want: np.ndarray, *, ulps: float = 0, atol: float = 0, what: str = "") -> None:
    """Same shape and dtype; integers and booleans equal; floats equal up to `ulps` units in the
    last place of the output type (plus `atol`), with NaN where NaN and infinities equal."""
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if got.dtype.kind not in "fV" and got.dtype.name not in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        bad = got != want
        assert not bad.any(), f"{what}: {int(bad.sum())} of {got.size} differ, first at " \
                              f"{np.argwhere(bad)[0].tolist()}: {got[bad][0]!r} != {want[bad][0]!r}"
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(g) | np.isnan(w)
    spacing = ulp(np.abs(w), got.dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: decided by g == w
        close = (g == w) | (np.abs(g - w) <= ulps * spacing + atol)
    bad = ~close & ~nan | (np.isnan(g) != np.isnan(w))
    if bad.any():
        where = np.argwhere(bad)[0].tolist()
        raise AssertionError(f"{what}: {int(bad.sum())} of {got.size} differ beyond {ulps} ulps"
                             f"{f' + {atol}' if atol else ''}; first at {where}: {g[tuple(where)]!r} != "
                             f"{w[tuple(where)]!r}")


def ulp(magnitude: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The spacing of `dtype`'s values at each magnitude (its smallest subnormal near 0)."""
    info = ml_dtypes.finfo(dtype)
    exponent = np.frexp(np.where(np.isfinite(magnitude), magnitude, 0))[1]
    return np.maximum(np.ldexp(float(info.eps), exponent - 1), float(info.smallest_subnormal))


def openvino_ulps(case: Case) -> float:
    """The CPU plugin's vector code for transcendental functions differs by an ulp or two from
    one instruction set to another (AVX2, AVX-512), so a case that is not exact allows twice its
    ulps plus two against OpenVINO; against the oracle it is held to its own `ulps`."""
    return case.ulps * 2 + 2 if case.ulps or case.atol else 0


def check(case: Case, batch: Sequence[Case] = ()) -> None:
    """Run one case: refused with its label, or equal to OpenVINO and to its oracle."""
    if case.error is not None:
        with pytest.raises(irscatter.IRError) as caught:
            run_irscatter(case)
        assert caught.value.label == case.error, caught.value
        return
    originals = [i.value.tobytes() for i in case.inputs]
    got = run_irscatter(case)
    for i, before in zip(case.inputs, originals):
        assert i.value.tobytes() == before, f"input {i.name} was written"  # bit for bit: NaN and -0.0 too
    check_layouts(case)
    judged_by = judge(case)
    if judged_by != "none":
        want = run_openvino(case, batch or [case])
        assert len(got) == len(want)
        ulps = openvino_ulps(case) + (1 if _holds_bf16(case) and judged_by == "cpu" and not _plugin_has_bf16() else 0)
        for k, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, ulps=ulps, atol=case.atol, what=f"output {k} against OpenVINO")
    elif case.openvino == "none":
        assert case.why, f"{case.id}: say why OpenVINO is not the judge"
    if case.oracle is not None:
        for k, (g, w) in enumerate(zip(got, _oracle_outputs(case))):
            assert_close(g, np.asarray(w).astype(g.dtype) if np.asarray(w).dtype != g.dtype else w,
                         ulps=case.ulps, atol=case.atol, what=f"output {k} against the oracle")


def other_layout(array: np.ndarray) -> np.ndarray:
    """The same values in another memory layout, as a model's own views (a Transpose, a reversed
    Slice) hand them to a kernel: column-major from rank 2, a negative stride at rank 1."""
    if array.ndim >= 2:
        return np.asfortranarray(array)
    if array.ndim == 1:
        return array[::-1].copy()[::-1]
    return array


def check_layouts(case: Case) -> None:
    """The kernel gives the same answer whatever the memory layout of its inputs, and writes
    none of them. Compared kernel against kernel (the layer run alone, as `run_layer` runs it):
    the same bits for integers, and for floats what a different summation order allows."""
    plain = [i.value for i in case.inputs]
    other = [other_layout(v) for v in plain]
    if all(o is v for o, v in zip(other, plain)):
        return
    try:
        want = call(case.op, plain, case.attrs)
    except irscatter.IRError:
        return  # (a case the layer alone cannot run: its other checks hold it)
    before = [o.tobytes() for o in other]
    got = call(case.op, other, case.attrs)
    assert [o.tobytes() for o in other] == before, "an input in another layout was written"
    want, got = (list(x) if isinstance(x, tuple) else [x] for x in (want, got))
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert_close(g, w, ulps=case.ulps * 2 + 4, atol=case.atol + _summation_slack(w),
                     what=f"output {k} with its inputs in another memory layout")


def _summation_slack(values: np.ndarray) -> float:
    """What summing in another order may change in a float output: a few units in the last
    place of its largest magnitude (a result near 0 may come from cancelling large terms)."""
    if values.dtype.kind not in "fV" and values.dtype.name not in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return 0.0
    finite = values.astype(np.float64)
    finite = np.abs(finite[np.isfinite(finite)])
    return 8 * float(ml_dtypes.finfo(values.dtype).eps) * float(finite.max()) if finite.size else 0.0


# --- generating -------------------------------------------------------------------------------

FLOAT_EDGES = (0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan)


def values(rng: np.random.Generator, shape: Sequence[int], dtype: Any, *, low: float = -4, high: float = 4,
           edges: bool = False) -> np.ndarray:
    """Random values of `dtype` in [low, high); with `edges`, floats include 0, -0, +-1, +-inf,
    NaN and a denormal, and integers their extremes."""
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    if dtype == np.bool_:
        out = rng.integers(0, 2, n).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        out = rng.integers(max(low, info.min), min(high, info.max) + 1, n).astype(dtype)
        if edges and n:
            extremes = np.array([info.min, info.max, 0], dtype)
            out[rng.integers(0, n, min(n, 3))] = extremes[: min(n, 3)]
    else:
        out = rng.uniform(low, high, n).astype(dtype)
        if edges and n:
            specials = np.array([*FLOAT_EDGES, np.finfo(np.float32).smallest_subnormal], np.float64).astype(dtype)
            k = min(n, len(specials))
            out[rng.choice(n, k, replace=False)] = specials[:k]
    return out.reshape(shape)


def shapes(rng: np.random.Generator, *, ranks: Sequence[int] = (0, 1, 2, 3, 4, 5), max_dim: int = 4,
           zero: bool = True) -> list[tuple[int, ...]]:
    """One random shape per rank, plus (with `zero`) one with a size-0 dimension."""
    out = [tuple(int(d) for d in rng.integers(1, max_dim + 1, r)) for r in ranks]
    if zero:
        r = max(r for r in ranks)
        if r:
            shape = list(rng.integers(1, max_dim + 1, r))
            shape[int(rng.integers(0, r))] = 0
            out.append(tuple(int(d) for d in shape))
    return out


def random_axes(rng: np.random.Generator, rank: int, *, negative: float = 0.3) -> list[int]:
    """One to `rank` distinct axes in random order, each written negatively with chance `negative`."""
    axes = [int(a) for a in rng.choice(rank, int(rng.integers(1, rank + 1)), replace=False)]
    return [a - rank if rng.random() < negative else a for a in axes]
