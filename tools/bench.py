"""Speed and memory of irscatter beside OpenVINO's CPU plugin, onnxruntime and the ONNX
reference evaluator, on the same workloads, in one run.

    python tools/bench.py [--only W1,W7] [--runs 5] [--json bench.json] [--small] [--no-memory]

Every workload is written to a work folder first: an IR (`model.xml` + `model.bin`) that
irscatter reads, the IR OpenVINO reads (the same file, except where the op is irscatter's
own and OpenVINO gets the equivalent ScatterNDUpdate), an equivalent ONNX model where one
exists, and the feeds. Engines that are not installed are left out of the table. W10 and W11
are bundled models (`models/small_cnn`, `models/stateful_decoder`); W11 times one step of a
stateful model, each engine's state primed by the prompt step (untimed) before every call.

Times: after one warm-up call per engine, the engines take turns (round-robin), so that
machine noise falls on all of them alike; each cell is the median of `--runs` calls.
`ratio` is the peer's time over irscatter's (above 1: irscatter is faster).

Memory: each (workload, engine) pair runs once more in a fresh process that prepares the
model and the feeds, resets the kernel's resident high-water mark, and runs once; the peak
growth of resident memory over the prepared state is reported, in MB. For W8 it is the
growth from loading, with the part that is pages of the memory-mapped `.bin` given apart.
For W12 (a decode step with the weights compressed or not) it is the peak from before the
model is loaded, since compiling is where an engine prepares its weights.
`--small` shrinks every workload so that the script itself can be tested in seconds.

Before and after the run it measures how many cores the machine gives it for arithmetic
(`effective_cores`), and says so: on a shared or virtual machine a second core may add anything
from nothing to a whole core's work, from one second to the next, to every engine alike.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_llm

from irscatter.ir.element_types import ElementType
from irscatter.ir.writer import IRWriter, Tensor

F32, I64 = np.dtype(np.float32), np.dtype(np.int64)
MODELS = Path(__file__).resolve().parent.parent / "models"
IRSCATTER, IRSCATTER_DONATED = "irscatter", "irscatter (donated)"
OPENVINO, ORT, ONNX_REF = "openvino", "onnxruntime", "onnx-reference"


# --- workloads: each writes its models and feeds into a folder ----------------------------------


@dataclass
class Workload:
    key: str
    title: str
    write: Callable[[Path, bool], None]
    kind: str = "run"  # run | load | first-output | step
    donate: tuple[str, ...] = ()  # inputs irscatter may also be benchmarked donating
    per_layer: int = 0  # report microseconds per layer for this many layers
    peak_from_load: bool = False  # memory: the peak from before loading the model, not from before the call


def _port(shape: tuple[int, ...], dtype) -> tuple[ElementType, tuple[int, ...]]:
    """A port's declared (element type, shape), as the writer takes it."""
    return ElementType.from_dtype(np.dtype(dtype)), tuple(shape)


def _parameter(w: IRWriter, name: str, shape: tuple[int, ...], dtype) -> Tensor:
    return w.parameter(name, ElementType.from_dtype(np.dtype(dtype)), tuple(shape), (name,))


def _one_op(w: IRWriter, type_: str, version: str, attrs: dict | None, sources: list[Tensor],
            inputs: list[tuple[tuple[int, ...], np.dtype]], out: tuple[tuple[int, ...], np.dtype, str],
            name: str = "op") -> Tensor:
    """One layer fed by `sources`, its output named, returned."""
    return w.layer(type_, version, sources, [_port(*spec) for spec in inputs], [_port(out[0], out[1])], name=name,
                   attrs={k: str(v) for k, v in (attrs or {}).items()}, output_names=[(out[2],)])[0]


def _save(w: IRWriter, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    w.save(folder / "model.xml")


def _single_op(folder: Path, name: str, op: tuple[str, str, dict | None], inputs: list[tuple[str, np.ndarray, bool]],
               onnx=None, feeds: dict | None = None) -> None:
    """A one-layer IR: `inputs` are (name, value, is_parameter); Consts go into the `.bin`."""
    w = IRWriter(name)
    ids = [_parameter(w, n, v.shape, v.dtype) if is_param else w.const(n, v) for n, v, is_param in inputs]
    data = inputs[0][1]
    out = _one_op(w, op[0], op[1], op[2], ids, [(v.shape, v.dtype) for _, v, _ in inputs],
                  (data.shape, data.dtype, "out"))
    w.result("out/sink", out, *_port(data.shape, data.dtype))
    _save(w, folder)
    np.savez(folder / "feeds.npz", **(feeds or {n: v for n, v, is_param in inputs if is_param}))
    if onnx is not None:
        (folder / "model.onnx").write_bytes(onnx.SerializeToString())


def _onnx(node_type: str, inputs: list[tuple[str, np.ndarray]], output_like: np.ndarray, **attrs):
    """A one-node ONNX model with the given graph inputs (None where onnx is not installed)."""
    try:
        from onnx import TensorProto, helper
    except ImportError:
        return None
    types = {F32: TensorProto.FLOAT, I64: TensorProto.INT64}
    node = helper.make_node(node_type, [n for n, _ in inputs], ["out"], **attrs)
    graph = helper.make_graph([node], "bench", [helper.make_tensor_value_info(n, types[v.dtype], v.shape)
                                                for n, v in inputs],
                              [helper.make_tensor_value_info("out", types[output_like.dtype], output_like.shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def scatter_elements(reduction: str, index_high: int | None = None):
    def write(folder: Path, small: bool) -> None:
        rng = np.random.default_rng(1)
        shape = (256, 64) if small else (4096, 1024)
        data = rng.standard_normal(shape, dtype=np.float32)
        indices = rng.integers(0, index_high or shape[0], shape, dtype=np.int64)
        updates = rng.standard_normal(shape, dtype=np.float32)
        onnx_reduction = {"sum": "add", "max": "max", "none": "none"}.get(reduction)
        onnx = None if onnx_reduction is None else _onnx(
            "ScatterElements", [("data", data), ("indices", indices), ("updates", updates)], data,
            axis=0, reduction=onnx_reduction)
        _single_op(folder, "scatter_elements", ("ScatterElementsUpdate", "opset12",
                                                {"reduction": reduction, "use_init_val": "true"}),
                   [("data", data, True), ("indices", indices, True), ("updates", updates, True),
                    ("axis", np.array(0, np.int64), False)], onnx)
    return write


def paged_cache_write(folder: Path, small: bool) -> None:
    rng = np.random.default_rng(2)
    rows, width, tokens = (1024, 16, 128) if small else (65536, 128, 8192)
    cache = rng.standard_normal((rows, width), dtype=np.float32)
    indices = rng.permutation(rows)[:tokens].astype(np.int64).reshape(tokens, 1)
    updates = rng.standard_normal((tokens, width), dtype=np.float32)
    onnx = _onnx("ScatterND", [("cache", cache), ("indices", indices), ("updates", updates)], cache)
    _single_op(folder, "kv_cache_write", ("ScatterNDUpdate", "opset15", {"reduction": "none"}),
               [("cache", cache, True), ("indices", indices, True), ("updates", updates, True)], onnx)


def slice_scatter(folder: Path, small: bool) -> None:
    rng = np.random.default_rng(3)
    n = 128 if small else 2048
    data = rng.standard_normal((n, n), dtype=np.float32)
    updates = rng.standard_normal((n, n // 2), dtype=np.float32)
    consts = [("start", [0]), ("stop", [n]), ("step", [2]), ("axes", [1])]
    _single_op(folder, "slice_scatter", ("SliceScatter", "opset15", None),
               [("data", data, True), ("updates", updates, True)]
               + [(name, np.array(v, np.int64), False) for name, v in consts])


def scatter_update(folder: Path, small: bool) -> None:
    rng = np.random.default_rng(4)
    shape, count = ((4, 512, 16), 64) if small else ((32, 8192, 64), 1024)
    data = rng.standard_normal(shape, dtype=np.float32)
    indices = rng.permutation(shape[1])[:count].astype(np.int64)
    updates = rng.standard_normal((shape[0], count, shape[2]), dtype=np.float32)
    _single_op(folder, "scatter_update", ("ScatterUpdate", "opset3", None),
               [("data", data, True), ("indices", indices, True), ("updates", updates, True),
                ("axis", np.array(1, np.int64), False)])


def paged_scatter_update(folder: Path, small: bool) -> None:
    """irscatter runs PagedScatterUpdate-1; the peers run the same write as a ScatterND of
    (block, offset) pairs, which is what OpenVINO users write for it."""
    rng = np.random.default_rng(5)
    blocks, block_size, d, b, s = (256, 16, 32, 8, 8) if small else (4096, 16, 128, 64, 64)
    cache = rng.standard_normal((blocks, block_size, 1, d), dtype=np.float32)
    slots = rng.permutation(blocks * block_size)[: b * s].astype(np.int64).reshape(b, s)
    src = rng.standard_normal((b, s, 1, d), dtype=np.float32)
    w = IRWriter("paged_scatter_update")
    ids = [_parameter(w, "cache", cache.shape, F32), _parameter(w, "slots", slots.shape, I64),
           _parameter(w, "src", src.shape, F32)]
    out = _one_op(w, "PagedScatterUpdate", "irscatter1", {"dim": -2}, ids,
                  [(cache.shape, F32), (slots.shape, I64), (src.shape, F32)], (cache.shape, F32, "out"))
    w.result("out/sink", out, *_port(cache.shape, F32))
    _save(w, folder)
    np.savez(folder / "feeds.npz", cache=cache, slots=slots, src=src)

    flat = slots.reshape(-1)
    pairs = np.stack([flat // block_size, flat % block_size], axis=-1)
    rows = src.reshape(b * s, 1, d)
    peer = folder / "peer"
    onnx = _onnx("ScatterND", [("cache", cache), ("indices", pairs), ("updates", rows)], cache)
    _single_op(peer, "paged_as_scatter_nd", ("ScatterNDUpdate", "opset15", {"reduction": "none"}),
               [("cache", cache, True), ("indices", pairs, True), ("updates", rows, True)], onnx)


def _chain_of_adds(w: IRWriter, shape: tuple[int, ...], n: int, addend: Callable[[int], Tensor]) -> None:
    """Parameter x, then n Adds of the running value and Const `addend(i)`, then a Result."""
    prev = _parameter(w, "x", shape, F32)
    for i in range(n):
        prev = _one_op(w, "Add", "opset1", {"auto_broadcast": "numpy"}, [prev, addend(i)], [(shape, F32)] * 2,
                       (shape, F32, f"t{i}"), name=f"add{i}")
    w.result("out/sink", prev, *_port(shape, F32))


def add_chain(layers: int):
    def write(folder: Path, small: bool) -> None:
        n = 200 if small else layers
        w = IRWriter("add_chain")
        shape = (4,)
        one = w.const("one", np.ones(shape, F32))  # shared by every Add
        _chain_of_adds(w, shape, n, lambda i: one)
        _save(w, folder)
        np.savez(folder / "feeds.npz", x=np.arange(4, dtype=np.float32))
        (folder / "layers.txt").write_text(str(n))
        try:
            from onnx import TensorProto, helper, numpy_helper
        except ImportError:
            return
        nodes = [helper.make_node("Add", ["x" if i == 0 else f"t{i - 1}", "one"], [f"t{i}" if i < n - 1 else "out"])
                 for i in range(n)]
        graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                                  [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)],
                                  [numpy_helper.from_array(np.ones(shape, F32), "one")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
        (folder / "model.onnx").write_bytes(model.SerializeToString())
    return write


def big_model(folder: Path, small: bool) -> None:
    """20000 layers: a Parameter, 9999 (Const, Add) pairs and a Result; 8 KB per Const."""
    pairs, width = (499, 2048) if small else (9999, 2048)
    rng = np.random.default_rng(6)
    w = IRWriter("big_model")
    shape = (width,)
    _chain_of_adds(w, shape, pairs,
                   lambda i: w.const(f"w{i}", rng.standard_normal(shape, dtype=np.float32) * np.float32(1e-3)))
    _save(w, folder)
    np.savez(folder / "feeds.npz", x=np.zeros(shape, F32))
    (folder / "layers.txt").write_text(str(w.layer_count))


def _bundled(folder: Path, name: str) -> Path:
    """Copy a bundled model's IR into the work folder; the source folder is returned."""
    src = MODELS / name
    folder.mkdir(parents=True, exist_ok=True)
    for file in ("model.xml", "model.bin"):
        shutil.copyfile(src / file, folder / file)
    return src


def _small_cnn_onnx(xml: Path):
    """small_cnn as ONNX, from the weights in its IR (found by their names), or None where onnx is
    not installed. Its layers map one to one: the IR's bias Adds stay Adds, BatchNormInference is
    BatchNormalization, the depthwise GroupConvolution a Conv with group=16."""
    try:
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    import irscatter

    w = {layer.name: layer.const_value for layer in irscatter.read_model(xml).layers_of_type("Const")}
    groups = w["dw.weight"].shape[0]
    w["dw.weight"] = w["dw.weight"].reshape(groups, 1, *w["dw.weight"].shape[-2:])  # [G, 1, 1, k, k] -> [G, 1, k, k]
    w["pool_axes"] = np.array([2, 3], np.int64)
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "conv1.weight"], ["c1"], pads=[1, 1, 1, 1]),
        node("Add", ["c1", "conv1.bias"], ["c1b"]),
        node("Relu", ["c1b"], ["r1"]),
        node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p1", "dw.weight"], ["dw"], pads=[1, 1, 1, 1], group=groups),
        node("BatchNormalization", ["dw", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"], ["bn"],
             epsilon=1e-5),
        node("Relu", ["bn"], ["r2"]),
        node("Conv", ["r2", "pw.weight"], ["pw"]),
        node("Add", ["pw", "pw.bias"], ["pwb"]),
        node("Relu", ["pwb"], ["r3"]),
        node("AveragePool", ["r3"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
        node("ReduceMean", ["p2", "pool_axes"], ["features"], keepdims=0),
        node("MatMul", ["features", "fc.weight"], ["fc"]),
        node("Add", ["fc", "fc.bias"], ["logits"]),
        node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    initializers = [numpy_helper.from_array(value, name) for name, value in w.items() if name in
                    {i for n in nodes for i in n.input}]
    graph = helper.make_graph(nodes, "small_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10]),
                               helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def small_cnn(folder: Path, small: bool) -> None:
    """The bundled small_cnn (`tools/make_models.py`) on its bundled input; it is small already."""
    src = _bundled(folder, "small_cnn")
    shutil.copyfile(src / "inputs.npz", folder / "feeds.npz")
    onnx = _small_cnn_onnx(folder / "model.xml")
    if onnx is not None:
        (folder / "model.onnx").write_bytes(onnx.SerializeToString())


def decoder_step(folder: Path, small: bool) -> None:
    """The bundled stateful_decoder: feeds `step0/x` (the prompt) fill its KV cache untimed,
    then `step1/x` (one token) is the timed call. --small keeps the bundled 4-token prompt."""
    src = _bundled(folder, "stateful_decoder")
    with np.load(src / "inputs.npz") as bundled:
        prompt, token = bundled["step0/x"], bundled["step1/x"]
    if not small:
        prompt = np.random.default_rng(7).standard_normal((1, 64, prompt.shape[-1]), dtype=np.float32)
    np.savez(folder / "feeds.npz", **{"step0/x": prompt, "step1/x": token})


WORKLOADS = [
    Workload("W1", "ScatterElementsUpdate-12 sum, 4096x1024", scatter_elements("sum")),
    Workload("W2", "ScatterNDUpdate-15 KV-cache write, 65536x128, 8192 rows", paged_cache_write, donate=("cache",)),
    Workload("W3", "SliceScatter-15, 2048x2048, every second column", slice_scatter),
    Workload("W4", "ScatterUpdate-3, 32x8192x64, 1024 indices on axis 1", scatter_update),
    Workload("W5max", "ScatterElementsUpdate-12 max, 4096x1024, many duplicates", scatter_elements("max", 256)),
    Workload("W5mean", "ScatterElementsUpdate-12 mean, 4096x1024, many duplicates", scatter_elements("mean", 256)),
    Workload("W6", "PagedScatterUpdate 4-D, cache 4096x16x1x128, index 64x64", paged_scatter_update,
             donate=("cache",)),
    Workload("W7", "2000 Add layers on 4 elements", add_chain(2000), per_layer=2000),
    Workload("W8", "loading 20000 layers, 80 MB .bin (read + infer)", big_model, kind="load"),
    Workload("W9a", "first output of W7 (load + prepare + run)", add_chain(2000), kind="first-output"),
    Workload("W9b", "first output of W8 (load + prepare + run)", big_model, kind="first-output"),
    Workload("W10", "small_cnn: conv, max pool, depthwise conv + batch norm, avg pool, MatMul, 1x3x32x32",
             small_cnn),
    Workload("W11", "stateful_decoder: one single-token step after a 64-token prompt (KV cache in state)",
             decoder_step, kind="step"),
    *(Workload(f"W12{fmt}", f"decode step at Qwen2.5-0.5B's shapes (24 blocks, lm_head 151936x896), {fmt} weights",
               bench_llm.write(fmt), peak_from_load=True) for fmt in ("f32", "int8", "int4")),
]


# --- engines: each prepares a workload and returns the timed call -------------------------------


def _NOTHING() -> None:
    pass


@dataclass
class Prepared:
    call: Callable[[], object]
    before: Callable[[], None] = _NOTHING  # untimed, runs before every call


def load_feeds(folder: Path) -> dict[str, np.ndarray]:
    with np.load(folder / "feeds.npz") as f:
        return {k: f[k] for k in f.files}


def _steps(feeds: dict[str, np.ndarray]) -> tuple[list[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """Feeds keyed `step<k>/<name>`, split into the steps that prime the model state and the last
    step, the one timed."""
    steps: dict[int, dict[str, np.ndarray]] = {}
    for key, value in feeds.items():
        step, name = key.split("/", 1)
        steps.setdefault(int(step.removeprefix("step")), {})[name] = value
    ordered = [steps[k] for k in sorted(steps)]
    return ordered[:-1], ordered[-1]


def _peer_folder(folder: Path) -> Path:
    return folder / "peer" if (folder / "peer").exists() else folder


def prepare(engine: str, workload: Workload, folder: Path) -> Prepared | None:
    """The timed call of `engine` on `workload`, or None where it has no equivalent."""
    xml = folder / "model.xml"
    if engine in (IRSCATTER, IRSCATTER_DONATED):
        import irscatter

        if workload.kind == "load":
            return Prepared(lambda: irscatter.read_model(xml).compile())
        feeds = load_feeds(folder)
        if workload.kind == "first-output":
            return Prepared(lambda: irscatter.read_model(xml).run(feeds))
        if workload.kind == "step":
            compiled = irscatter.compile_model(xml)
            prime, last = _steps(feeds)

            def refill_state() -> None:  # every timed step sees the same cache, the prompt's
                compiled.reset_state()
                for step in prime:
                    compiled.run(step)
            return Prepared(lambda: compiled.run(last), refill_state)
        model = irscatter.read_model(xml)
        model.compile()
        if engine == IRSCATTER:
            return Prepared(lambda: model.run(feeds))
        fresh = dict(feeds)

        def refill() -> None:  # a donated buffer is consumed: each call gets its own copy
            for name in workload.donate:
                fresh[name] = feeds[name].copy()
        return Prepared(lambda: model.run(fresh, donate=workload.donate), refill)

    peer = _peer_folder(folder)
    if engine == OPENVINO:
        import openvino as ov

        config = {"INFERENCE_PRECISION_HINT": "f32"}
        pxml = str(peer / "model.xml")
        if workload.kind == "load":
            return Prepared(lambda: ov.Core().read_model(pxml))
        feeds = load_feeds(peer)
        if workload.kind == "first-output":
            def first() -> object:
                core = ov.Core()
                return core.compile_model(core.read_model(pxml), "CPU", config)(feeds)
            return Prepared(first)
        compiled = ov.Core().compile_model(pxml, "CPU", config)
        if workload.kind == "step":
            request = compiled.create_infer_request()
            prime, last = _steps(feeds)

            def refill_request_state() -> None:
                request.reset_state()
                for step in prime:
                    request.infer(step)
            return Prepared(lambda: request.infer(last), refill_request_state)
        return Prepared(lambda: compiled(feeds))

    onnx_file = peer / "model.onnx"
    if workload.kind != "run" or not onnx_file.exists():
        return None
    feeds = load_feeds(peer)
    if engine == ORT:
        import onnxruntime

        session = onnxruntime.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
        return Prepared(lambda: session.run(None, feeds))
    if engine == ONNX_REF:
        from onnx.reference import ReferenceEvaluator

        evaluator = ReferenceEvaluator(str(onnx_file))
        return Prepared(lambda: evaluator.run(None, feeds))
    raise ValueError(engine)


def scatter_backend() -> str:
    """The path irscatter's scatter kernels take in this run: numba when it is installed, unless
    IRSCATTER_BACKEND=numpy (see irscatter/ops/common/accel.py)."""
    from irscatter.ops.common import accel

    return "numba" if accel.enabled() else "numpy"


def byte_compile_irscatter() -> str:
    """Compiles the bytecode of the irscatter the workers import, as installing it does, and
    says where that irscatter is. Python writes no bytecode where PYTHONDONTWRITEBYTECODE is
    set, and a checkout on the path then compiles each op module from source in every process,
    at its first use: inside the first run the tools time, where an installed copy (whose
    bytecode pip compiles) or any environment that writes bytecode pays nothing. The engines it
    is compared with come from wheels whose bytecode pip compiled at installation."""
    import compileall

    import irscatter

    package = Path(irscatter.__file__).resolve().parent
    if not compileall.compile_dir(package, quiet=1):
        raise RuntimeError(f"could not compile the bytecode of {package}")
    return str(package)


def keep_compiled_loops() -> None:
    """Has irscatter keep the compiled loops it keeps as machine code (`machine_code.keep_all`,
    in a process of its own, since it imports numba), as the first process on a machine to use
    them does: a first run then finds them as it would on any machine irscatter has run on."""
    from irscatter.ops.common import accel

    if accel.enabled():
        code = "from irscatter.ops.common import machine_code; machine_code.keep_all()"
        subprocess.run([sys.executable, "-c", code], check=True)


def installed_engines() -> list[str]:
    engines = [IRSCATTER]
    for module, name in (("openvino", OPENVINO), ("onnxruntime", ORT), ("onnx.reference", ONNX_REF)):
        try:
            __import__(module)
        except ImportError:
            continue
        engines.append(name)
    return engines


# --- the machine ----------------------------------------------------------------------------------

# The parallel probe's product: f32, square, small enough to stay in a core's cache, so that it
# measures arithmetic rather than memory; repeated long enough (some tens of ms) to outlast a
# thread's start.
PROBE_SIZE, PROBE_CALLS, PROBE_ROUNDS = 256, 32, 3


def effective_cores() -> dict[str, float]:
    """How many cores this process gets now, for arithmetic: the same products (BLAS held to
    one thread) on one thread, then on one thread per core at once, and the ratio of the work
    done per second (`effective`, out of `cores`), with one thread's GFLOP/s. A virtual
    machine's cores may be hyper-threads of one physical core, or lent to other guests, and
    then a second thread adds little, to every engine alike: ratios measured at such a time
    compare single-core speeds, and times of either engine move with it. Median of
    PROBE_ROUNDS rounds."""
    import threading

    from threadpoolctl import threadpool_limits

    from irscatter.ops.common.threads import CORES

    rng = np.random.default_rng(0)
    operands = [(rng.standard_normal((PROBE_SIZE, PROBE_SIZE), dtype=np.float32),
                 rng.standard_normal((PROBE_SIZE, PROBE_SIZE), dtype=np.float32),
                 np.empty((PROBE_SIZE, PROBE_SIZE), np.float32)) for _ in range(CORES)]

    def products(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        for _ in range(PROBE_CALLS):
            np.matmul(a, b, out=out)

    def together() -> float:
        threads = [threading.Thread(target=products, args=o) for o in operands]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return time.perf_counter() - start

    with threadpool_limits(limits=1, user_api="blas"):
        products(*operands[0])  # (warm-up)
        alone, side_by_side = [], []
        for _ in range(PROBE_ROUNDS):
            start = time.perf_counter()
            products(*operands[0])
            alone.append(time.perf_counter() - start)
            side_by_side.append(together())
    one, all_ = statistics.median(alone), statistics.median(side_by_side)
    return {"cores": CORES, "effective": round(CORES * one / all_, 2),
            "one_thread_gflops": round(2 * PROBE_SIZE ** 3 * PROBE_CALLS / one / 1e9, 1)}


def describe_cores(probe: dict[str, float]) -> str:
    return (f"{probe['effective']:.2f} effective of {probe['cores']} cores "
            f"(one thread {probe['one_thread_gflops']:.0f} GFLOP/s in f32 products)")


# --- measuring ----------------------------------------------------------------------------------


@dataclass
class Row:
    key: str
    title: str
    times_ms: dict[str, float] = field(default_factory=dict)
    peak_mb: dict[str, float] = field(default_factory=dict)
    file_mb: dict[str, float] = field(default_factory=dict)  # loading: .bin pages made resident
    note: str = ""


# A call shorter than this is timed in a burst of back-to-back calls (when it needs nothing
# done before each call), so that a sample measures the engine rather than the timer and the
# cache misses of the engine timed just before it.
SHORT_CALL = 2e-3


def time_interleaved(prepared: dict[str, Prepared], runs: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in prepared}
    burst: dict[str, int] = {}
    for name, p in prepared.items():  # warm-up, which also sizes the bursts
        p.before()
        start = time.perf_counter()
        p.call()
        took = time.perf_counter() - start
        burst[name] = max(1, int(SHORT_CALL / max(took, 1e-7))) if p.before is _NOTHING else 1
    # Engines with thread pools (OpenVINO, onnxruntime) keep their threads spinning for a while
    # after a call, on the cores the next engine needs. So samples are taken in blocks, a block
    # per engine and round, each opened by an untimed call; the rounds still interleave the
    # engines against drift of the machine.
    rounds = min(runs, 5)
    for r in range(rounds):
        for name, p in prepared.items():
            p.before()
            p.call()
            for _ in range(runs // rounds + (r < runs % rounds)):
                p.before()
                n = burst[name]
                start = time.perf_counter()
                for _ in range(n):
                    p.call()
                samples[name].append((time.perf_counter() - start) / n)
    return {name: 1e3 * statistics.median(s) for name, s in samples.items()}


def status_kb(field_name: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field_name} not in /proc/self/status")


def probe(engine: str, workload: Workload, folder: Path) -> float | list[float] | None:
    """Peak growth of resident memory (MB) of one call, measured in this (fresh) process.
    For loading: the growth of resident memory, and of its file-backed part alone (the
    pages of the memory-mapped `.bin` that were read)."""
    if workload.kind == "load":
        p = prepare(engine, workload, folder)  # imports the engine: its libraries are not counted
        if p is None:
            return None
        before, before_file = status_kb("VmRSS"), status_kb("RssFile")
        kept = p.call()  # keep the loaded model alive while measuring  # noqa: F841
        return [(status_kb("VmRSS") - before) / 1024, (status_kb("RssFile") - before_file) / 1024]
    if workload.peak_from_load:  # what compiling costs counts too: the engine alone is imported first
        __import__("openvino" if engine == OPENVINO else "irscatter")
    else:
        p = prepare(engine, workload, folder)
        if p is None:
            return None
        p.before()
    before = reset_peak_rss()
    if before is None:
        return None
    if workload.peak_from_load:
        p = prepare(engine, workload, folder)
        p.before()
    p.call()
    return (status_kb("VmHWM") - before) / 1024


def reset_peak_rss() -> int | None:
    """Reset this process's resident high-water mark (VmHWM) to its current resident size and
    return that size in KB, or None where the kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return None
    return status_kb("VmRSS")


def probe_in_subprocess(engine: str, key: str, folder: Path) -> float | list[float] | None:
    cmd = [sys.executable, __file__, "--probe", key, engine, str(folder)]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        print(f"  memory probe of {engine} on {key} failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout)


def bench(workloads: list[Workload], root: Path, runs: int, small: bool, memory: bool) -> list[Row]:
    engines = installed_engines()
    rows = []
    for wl in workloads:
        folder = root / wl.key
        wl.write(folder, small)
        row = Row(wl.key, wl.title)
        names = [IRSCATTER] + ([IRSCATTER_DONATED] if wl.donate else []) + engines[1:]
        prepared = {}
        for name in names:
            p = prepare(name, wl, folder)
            if p is not None:
                prepared[name] = p
        row.times_ms = time_interleaved(prepared, runs)
        if memory:
            for name in prepared:
                mb = probe_in_subprocess(name, wl.key, folder)
                if isinstance(mb, list):
                    row.peak_mb[name], row.file_mb[name] = mb
                elif mb is not None:
                    row.peak_mb[name] = mb
        if wl.per_layer:
            n = int((folder / "layers.txt").read_text())
            row.note = "us/layer: " + ", ".join(f"{k} {1e3 * v / n:.2f}" for k, v in row.times_ms.items())
        if wl.kind == "load":
            row.note = f".bin {(folder / 'model.bin').stat().st_size / 2**20:.1f} MB, {(folder / 'layers.txt').read_text()} layers"
        if wl.donate:
            size = sum(a.nbytes for a in load_feeds(folder).values()) / 2**20
            row.note = (row.note + "; " if row.note else "") + f"inputs {size:.1f} MB"
        rows.append(row)
        print(format_row(row), flush=True)
    return rows


def format_row(row: Row) -> str:
    base = row.times_ms.get(IRSCATTER)
    lines = [f"{row.key}  {row.title}" + (f"  [{row.note}]" if row.note else "")]
    for name, ms in row.times_ms.items():
        ratio = f"{ms / base:7.2f}x" if base and name != IRSCATTER else "        "
        mem = f"{row.peak_mb[name]:9.1f} MB" if name in row.peak_mb else "          -"
        if name in row.file_mb:
            mem += f" (.bin resident {row.file_mb[name]:.1f} MB)"
        lines.append(f"    {name:<22}{ms:11.3f} ms {ratio} {mem}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated workload keys (W1,W2,...; W5 means W5max,W5mean)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=Path("bench.json"), help="where to write the table as JSON")
    parser.add_argument("--small", action="store_true", help="tiny sizes: checks the script, measures nothing")
    parser.add_argument("--no-memory", action="store_true", help="skip the per-engine memory probes")
    parser.add_argument("--workdir", type=Path, help="keep the generated models here")
    parser.add_argument("--scaling", action="store_true",
                        help="instead: W1, W2 and W8 at four sizes spanning 16x, with the fitted exponent k of "
                             "time ~ size^k (tools/scaling.py)")
    parser.add_argument("--plot", action="store_true", help="with --scaling: draw the curves into a PNG beside the JSON")
    parser.add_argument("--probe", nargs=3, metavar=("WORKLOAD", "ENGINE", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.plot and not args.scaling:
        parser.error("--plot only applies with --scaling")
    if args.scaling:
        return _scaling(args)

    if args.probe:
        key, engine, folder = args.probe
        wl = next(w for w in WORKLOADS if w.key == key)
        print(json.dumps(probe(engine, wl, Path(folder))))
        return 0
    selected = WORKLOADS
    if args.only:
        keys = args.only.split(",")
        selected = [w for w in WORKLOADS if w.key in keys or re.match(r"W\d+", w.key).group() in keys]
        if not selected:
            parser.error(f"no workload matches {args.only}")
    print(f"irscatter's scatter backend: {scatter_backend()}; bytecode compiled in {byte_compile_irscatter()}", flush=True)
    cores_before = effective_cores()
    print(f"before: {describe_cores(cores_before)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="irscatter-bench-") as tmp:
        root = args.workdir or Path(tmp)
        rows = bench(selected, root, args.runs, args.small, not args.no_memory)
    cores_after = effective_cores()
    print(f"after: {describe_cores(cores_after)}")
    args.json.write_text(json.dumps({"engines": installed_engines(), "scatter_backend": scatter_backend(),
                                     "runs": args.runs, "small": args.small,
                                     "cores_before": cores_before, "cores_after": cores_after,
                                     "rows": [row.__dict__ for row in rows]}, indent=2))
    print(f"wrote {args.json}")
    return 0


def _scaling(args: argparse.Namespace) -> int:
    import scaling

    with tempfile.TemporaryDirectory(prefix="irscatter-scaling-") as tmp:
        curves = scaling.measure(args.workdir or Path(tmp), args.runs, args.small)
    args.json.write_text(json.dumps({"engines": installed_engines(), "scatter_backend": scatter_backend(),
                                     "runs": args.runs, "small": args.small,
                                     "scaling": scaling.as_json(curves)}, indent=2))
    print(f"wrote {args.json}")
    if args.plot:
        png = args.json.with_suffix(".png")
        scaling.plot(curves, png)
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
