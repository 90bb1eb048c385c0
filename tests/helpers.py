"""Shared test helpers: OpenVINO as an oracle, and hand-written IR text for broken models."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

import irscatter


# --- OpenVINO as the oracle ------------------------------------------------------------------


def save_ov(model, folder: Path, name: str = "model", version: str = "v11") -> Path:
    """Serialize an `ov.Model` the way users get IR files (the generator's own writer)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
    from make_models import save

    xml = folder / f"{name}.xml"
    save(model, xml, version)
    return xml


def to_ov_tensor(array: np.ndarray):
    """OpenVINO's Python API does not know ml_dtypes: bf16 travels as raw 16-bit patterns."""
    import openvino as ov

    if array.dtype == ml_dtypes.bfloat16:
        tensor = ov.Tensor(ov.Type.bf16, list(array.shape))
        tensor.data.view(np.uint16)[...] = array.view(np.uint16)
        return tensor
    return ov.Tensor(np.require(array, requirements='C'))  # ascontiguousarray would turn 0-d into 1-d


def from_ov_tensor(tensor) -> np.ndarray:
    import openvino as ov

    if tensor.element_type == ov.Type.bf16:
        return np.array(tensor.data).view(np.uint16).view(ml_dtypes.bfloat16)
    return np.array(tensor.data)


def run_ov(xml: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """OpenVINO's CPU plugin at f32 inference precision, outputs in Result order."""
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    request.infer({k: to_ov_tensor(np.asarray(v)) for k, v in feeds.items()})
    return [from_ov_tensor(request.get_output_tensor(i)) for i in range(len(compiled.outputs))]


def evaluate_reference(node, inputs: list[np.ndarray]) -> np.ndarray | None:
    """OpenVINO's core reference kernel for `node` (the spec's behaviour), or None where the
    reference does not implement the element type."""
    import openvino as ov

    out = ov.Tensor(node.get_output_element_type(0), list(node.get_output_shape(0)))
    if not node.evaluate([out], [to_ov_tensor(np.asarray(a)) for a in inputs]):
        return None
    return from_ov_tensor(out)


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
    """An IR file with one layer under test: a Parameter per input, a Result per output."""
    def info(dtype):
        et = irscatter.ElementType.from_dtype(np.dtype(dtype))
        return str(et), et.precision

    n = len(inputs)
    layers, edges = [], []
    for i, (pname, array) in enumerate(inputs):
        et, prec = info(array.dtype)
        layers.append(param(i, pname, array.shape, et, prec))
        edges.append((i, 0, n, i))
    ins = [port(i, info(a.dtype)[1], a.shape) for i, (_, a) in enumerate(inputs)]
    outs = [port(n + k, info(dt)[1], shape) for k, (shape, dt) in enumerate(outputs)]
    op = layer(n, "under_test", type_, version, data=attrs, inputs=ins, outputs=outs)
    if body:
        op = op[: -len("</layer>")] + body + "</layer>"
    layers.append(op)
    for k, (shape, dt) in enumerate(outputs):
        layers.append(result(n + 1 + k, f"out{k}", shape, info(dt)[1]))
        edges.append((n, n + k, n + 1 + k, 0))
    return write(folder, net(layers, edges), name=name)


# --- the console script --------------------------------------------------------------------------


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the installed `irscatter` console script as a user would (a subprocess)."""
    exe = shutil.which("irscatter")
    command = [exe] if exe else [sys.executable, "-m", "irscatter.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, cwd=cwd, timeout=120)
