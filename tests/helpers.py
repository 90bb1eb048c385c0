"""Shared test helpers: OpenVINO as an oracle, hand-written IR text for broken models, and a
model of one layer written by the package's writer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import irscatter

# The OpenVINO spec pages beside the project, when present; tests that read them skip otherwise.
OP_SPECS = Path(__file__).resolve().parents[2] / "shared" / "specs" / "openvino-docs" / "operation-sets" / "operation-specs"

# How many examples a property test draws: a quick count in the default run (the suite must fit
# CI's time on two cores), the full count with IRSCATTER_EXHAUSTIVE=1, the longer hunt to run
# before a release or after touching the kernels a test covers.
EXHAUSTIVE = os.environ.get("IRSCATTER_EXHAUSTIVE", "") not in ("", "0")


def examples(full: int, quick: int) -> int:
    return full if EXHAUSTIVE else quick


def element_dtypes(*names: str) -> dict[str, type]:
    """The numpy scalar type of each named IR element type, in the order given: a test module's
    table of the types it covers, read from the package's one table (`ElementType.dtype`)."""
    return {name: irscatter.ElementType(name).dtype.type for name in names}


# --- OpenVINO as the oracle ------------------------------------------------------------------


def save_ov(model, folder: Path, name: str = "model", version: str = "v11") -> Path:
    """Serialize an `ov.Model` the way users get IR files (the generator's own writer)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from make_models import save

    xml = folder / f"{name}.xml"
    save(model, xml, version)
    return xml


def ov_model_of(outputs, name: str = "model"):
    """An ov.Model of `outputs` (nodes or node outputs) with every Parameter they depend on, by name."""
    import openvino as ov
    import openvino.opset15 as ops

    # Every get_node() call makes a fresh Python wrapper, so `id()` of a dropped one may be reused:
    # the visited set keys on OpenVINO's own instance id instead.
    found, stack, seen = {}, [o.get_node() if hasattr(o, "get_node") else o for o in outputs], set()
    while stack:
        node = stack.pop()
        if node.get_instance_id() in seen:
            continue
        seen.add(node.get_instance_id())
        if node.get_type_name() == "Parameter":
            found[node.get_friendly_name()] = node
        stack.extend(i.get_source_output().get_node() for i in node.inputs())
    return ov.Model([ops.result(o) for o in outputs], [found[k] for k in sorted(found)], name)


_ORACLE = None
# Notes made in this process since the last test report: (section, line). conftest moves them
# onto each test's report, so that they reach the run's summary from pytest-xdist's workers too.
PENDING_NOTES: list[tuple[str, str]] = []


def record_note(section: str, line: str) -> None:
    """A line for a section of the run's summary: "oracle" (a case not checked against the CPU
    plugin), "cpu" (a check that depends on this CPU), or a harness count key."""
    PENDING_NOTES.append((section, line))


def oracle():
    """The session's OpenVINO worker process (started on first use, restarted after a crash)."""
    global _ORACLE
    if _ORACLE is None:
        from irscatter.targets.openvino import OpenVINOProcess

        _ORACLE = OpenVINOProcess(timeout=float(os.environ.get("IRSCATTER_ORACLE_TIMEOUT", "120")))
    return _ORACLE


_CAPABILITIES: frozenset[str] | None = None


def plugin_capabilities() -> frozenset[str]:
    """What OpenVINO's CPU plugin says this CPU computes natively (its OPTIMIZATION_CAPABILITIES:
    FP32, BF16 with AVX-512, FP16 with AVX512-FP16, INT8, ...), asked once."""
    global _CAPABILITIES
    if _CAPABILITIES is None:
        from irscatter.targets import TargetFailure

        try:
            _CAPABILITIES = frozenset(oracle().inference_precision("CPU", {})["capabilities"])
        except TargetFailure:
            _CAPABILITIES = frozenset()
    return _CAPABILITIES


def plugin_has_avx512() -> bool:
    """Whether the CPU plugin runs its AVX-512 kernels here: it lists WINOGRAD among its
    capabilities exactly when the CPU has AVX-512 (the Winograd convolutions need it)."""
    return "WINOGRAD" in plugin_capabilities()


def cpu_note(text: str) -> None:
    """Say, in the run's summary, which form of a CPU-dependent test ran here and why."""
    case = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    record_note("cpu", f"{case}: {text}")


def _note(text: str) -> None:
    case = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
    line = " ".join(text.split())  # one line, whatever OpenVINO's message holds
    record_note("oracle", f"{case}: {line if len(line) <= 300 else line[:300] + '...'}")


# What the CPU plugin says when it has no kernel for a layer on this CPU (an i32 AvgPool without
# AVX-512): a gap of the device, judged like a crash, not a fault of the test.
NO_KERNEL_HERE = "Supported primitive descriptors list is empty"


def run_ov(xml: Path, feeds, *, fallback=None) -> list[np.ndarray]:
    """OpenVINO's CPU plugin at f32 inference precision, outputs in Result order.

    It runs in a worker process, twice, into differently pre-filled outputs. When the plugin
    crashes, hangs or answers unstably, the case is checked against OpenVINO's core reference
    (also out of process) instead, else against `fallback()` (the spec oracle), else skipped;
    each such case is listed at the end of the run.
    """
    from irscatter.targets import TargetFailure

    try:
        return oracle().infer(xml, feeds, config={"INFERENCE_PRECISION_HINT": "f32"})
    except TargetFailure as e:
        if e.kind == "refused" and NO_KERNEL_HERE not in e.message:
            raise  # OpenVINO rejected the model or the inputs: the test itself is wrong
        failure = e
    try:
        outputs = oracle().evaluate(xml, feeds)
        _note(f"OpenVINO {failure.kind} ({failure.message}); checked against its core reference instead")
        return outputs
    except TargetFailure as e:
        reference_failure = e
    if fallback is not None:
        _note(f"OpenVINO {failure.kind} ({failure.message}) and its core reference could not answer "
              f"({reference_failure.message}); checked against the spec oracle instead")
        return list(fallback())
    _note(f"OpenVINO {failure.kind} ({failure.message}); no other oracle: skipped")
    pytest.skip(f"OpenVINO {failure.kind} on this case and no other oracle answered: {failure.message}")


def evaluate_reference(node) -> np.ndarray | None:
    """OpenVINO's core reference kernel for `node` (the spec's behaviour), or None where the
    reference does not implement the element type. `node`'s inputs must be Constants: it is
    saved as a model of its own and evaluated in the worker process."""
    import openvino as ov
    import openvino.opset15 as ops

    from irscatter.targets import TargetFailure

    with tempfile.TemporaryDirectory() as folder:
        xml = Path(folder) / "node.xml"
        ov.save_model(ov.Model([ops.result(node)], [], "node"), str(xml), compress_to_fp16=False)
        try:
            (out,) = oracle().evaluate(xml, {})
        except TargetFailure as e:
            if e.kind == "refused":
                return None
            raise
    return out


def run_internal_ops_openvino(folder: Path, jobs: list[dict]) -> list[dict[str, np.ndarray]]:
    """OpenVINO's CPU plugin on `jobs` (see tests/data/internal_ops_openvino.py: IR files of the
    internal ops it reads once loaded, with each input as it is after the run, and the subgraph
    OpenVINO fuses into MOE), in one process; returns each job's arrays. An "ir" job gives
    `feeds` (arrays in input order) instead of a file; "moe" jobs give `arrays`."""
    import json

    for n, job in enumerate(jobs):
        job["out"] = str(folder / f"job{n}.npz")
        for key in ("feeds", "arrays"):
            if key in job:
                np.savez(folder / f"job{n}_{key}.npz", **{str(i): a for i, a in enumerate(job[key])}
                         if isinstance(job[key], list) else job[key])
                job[key] = str(folder / f"job{n}_{key}.npz")
        if "xml" in job:
            job["xml"] = str(job["xml"])
    (folder / "jobs.json").write_text(json.dumps(jobs))
    script = Path(__file__).parent / "data" / "internal_ops_openvino.py"
    done = subprocess.run([sys.executable, str(script), str(folder / "jobs.json")], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [dict(np.load(job["out"])) for job in jobs]


def edited_copy(tmp_path: Path, xml: Path, old: str, new: str) -> Path:
    """A copy of an IR (xml and bin) in `tmp_path` with the first `old` of its XML replaced by `new`."""
    text = xml.read_text()
    assert old in text, f"{old!r} is not in {xml.name}"
    copy = tmp_path / xml.name
    copy.write_text(text.replace(old, new, 1))
    copy.with_suffix(".bin").write_bytes(xml.with_suffix(".bin").read_bytes())
    return copy


def run_irscatter(xml: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return list(irscatter.read_model(xml).run(feeds).values())


# --- hand-written IR ---------------------------------------------------------------------------


def port(pid: int, precision: str | None = "FP32", dims=(), names: str | None = None) -> str:
    attrs = f' id="{pid}"'
    if precision is not None:
        attrs += f' precision="{precision}"'
    if names is not None:
        attrs += f' names="{names}"'
    return f"<port{attrs}>" + "".join(f"<dim>{d}</dim>" for d in dims) + "</port>"


def layer(lid, name, type_, version="opset1", data=None, inputs=(), outputs=(), extra="") -> str:
    data_xml = ""
    if data is not None:
        data_xml = "<data " + " ".join(f'{k}="{v}"' for k, v in data.items()) + "/>"
    ins = f"<input>{''.join(inputs)}</input>" if inputs else ""
    outs = f"<output>{''.join(outputs)}</output>" if outputs else ""
    return f'<layer id="{lid}" name="{name}" type="{type_}" version="{version}"{extra}>{data_xml}{ins}{outs}</layer>'


def net(layers: list[str], edges: list[tuple[int, int, int, int]], version: int = 11) -> str:
    e = "".join(f'<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>' for a, b, c, d in edges)
    return f'<?xml version="1.0"?>\n<net name="t" version="{version}">\n<layers>\n' + "\n".join(layers) + f"\n</layers>\n<edges>{e}</edges>\n</net>\n"


def param(lid, name, dims, et="f32", precision="FP32") -> str:
    shape = ",".join(str(d) if d != -1 else "?" for d in dims)
    return layer(lid, name, "Parameter", data={"shape": shape, "element_type": et}, outputs=[port(0, precision, dims, names=name)])


def result(lid, name, dims, precision="FP32") -> str:
    return layer(lid, name, "Result", inputs=[port(0, precision, dims)])


def add(lid, name, dims, precision="FP32") -> str:
    return layer(lid, name, "Add", data={"auto_broadcast": "numpy"},
                 inputs=[port(0, precision, dims), port(1, precision, dims)], outputs=[port(2, precision, dims)])


def write(folder: Path, xml: str, weights: bytes | None = None, name: str = "model") -> Path:
    path = folder / f"{name}.xml"
    path.write_text(xml)
    if weights is not None:
        path.with_suffix(".bin").write_bytes(weights)
    return path


def one_layer_ir(folder: Path, type_: str, version: str, attrs: dict, inputs: list[tuple[str, np.ndarray]],
                 outputs: list[tuple[tuple[int, ...], np.dtype]], body: str = "", name: str = "model") -> Path:
    """An IR file with one layer under test: a Parameter per input, a Result per output; `body`
    is the layer's `<body>` element as XML text, written by hand."""
    from lxml import etree

    from irscatter.ir.writer import IRWriter

    def etype(dtype) -> irscatter.ElementType:
        return irscatter.ElementType.from_dtype(np.dtype(dtype))

    writer = IRWriter("t")
    sources = [writer.parameter(pname, etype(array.dtype), array.shape, (pname,)) for pname, array in inputs]
    out_types = [(etype(dt), tuple(shape)) for shape, dt in outputs]
    tensors = writer.layer(type_, version, sources, [(etype(a.dtype), a.shape) for _, a in inputs], out_types,
                           name="under_test", attrs={k: str(v) for k, v in attrs.items()},
                           children=[etree.fromstring(body)] if body else [])
    for k, (tensor, (et, shape)) in enumerate(zip(tensors, out_types)):
        writer.result(f"out{k}", tensor, et, shape)
    return writer.save(folder / f"{name}.xml")


# --- the console script --------------------------------------------------------------------------


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the installed `irscatter` console script as a user would (a subprocess)."""
    exe = shutil.which("irscatter")
    command = [exe] if exe else [sys.executable, "-m", "irscatter.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@contextmanager
def kernel_hidden(type_name: str, version: int):
    """OpenVINO's `type_name`-`version` as if irscatter had no kernel for it: the opset is
    complete, so the `no-kernel` path is reached only this way (or by a future opset)."""
    from irscatter.ops import registry

    registry.load_all()
    versions = registry._REGISTRY[("opset", type_name.lower())]
    cls = versions.pop(version)
    registry._RESOLVED.clear()
    try:
        yield cls
    finally:
        versions[version] = cls
        registry._RESOLVED.clear()


def compressed_model(folder: Path) -> tuple[Path, dict[str, np.ndarray]]:
    """A model of a few KB whose weights NNCF's way compressed, built as tools/bench_llm.py
    builds its benchmark: x [1, 64] through an int8 MatMul (u8 codes and zero points per row,
    f16 scales) and an int4 one (u4 codes in groups of 32, a Reshape before the last Convert);
    returns the xml and one feed."""
    import openvino as ov
    import openvino.opset13 as ops

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from bench_llm import Weights

    x = ops.parameter([1, 64], ov.Type.f32, name="x")
    y = Weights("int8", seed=3).linear(x, 32, 64)
    z = Weights("int4", seed=4, group=32).linear(y, 16, 32)
    for node, name in ((y, "y"), (z, "z")):
        node.output(0).get_tensor().set_names({name})
    xml = folder / "compressed.xml"
    ov.save_model(ov.Model([ops.result(y), ops.result(z)], [x], "compressed"), xml, compress_to_fp16=False)
    return xml, {"x": np.random.default_rng(5).standard_normal((1, 64), dtype=np.float32)}


# --- compiled passes against numpy's path -----------------------------------------------------------


def nan_blind_bits(a: np.ndarray) -> np.ndarray:
    """Bits, every NaN as one value (a NaN's payload depends on the order of its operands)."""
    bits = a.view(f"u{a.itemsize}").copy()
    bits[np.isnan(a.astype(np.float64))] = 0
    return bits


def numpy_then_compiled(op, *inputs) -> np.ndarray:
    """The numpy path's result, then the layer's first and second calls (the first takes numpy's
    path, the second the compiled loops, `accel.loads`): the same bits, and the inputs unwritten.
    Returns the second call's result."""
    from irscatter.ops.common import accel

    before = [a.copy() for a in inputs]
    with accel.use("numpy"):
        expected = op.compute(*inputs)
    with accel.use("auto"):
        first = op.compute(*inputs)
        got = op.compute(*inputs)
    for outcome in (first, got):
        assert outcome.dtype == expected.dtype and outcome.shape == expected.shape
        assert np.array_equal(nan_blind_bits(outcome), nan_blind_bits(expected))
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(inputs, before))
    return got


def sdpa_op(causal: bool, inputs: int):
    """A ScaledDotProductAttention-13 layer of `inputs` f32 inputs, ready to compute."""
    ports = "".join(f'<port id="{i}" precision="FP32"/>' for i in range(inputs))
    return irscatter.ops.registry.instantiate(irscatter.parse_layer(
        f'<layer id="0" name="sdpa" type="ScaledDotProductAttention" version="opset13">'
        f'<data causal="{str(causal).lower()}"/><input>{ports}</input>'
        f'<output><port id="{inputs}" precision="FP32"/></output></layer>'))
