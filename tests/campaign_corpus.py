"""A small corpus with planted faults, and a target that has one of them, for the campaign tests.

OpenVINO computes these small models correctly, so the faults are planted where a campaign
can see them without it:

* `MisTarget`, irscatter itself run as a target, but with one op type's kernel swapped for
  another's (Tanh computed as Sigmoid: both opset1 ops without attributes), so every model
  holding a Tanh diverges there; and a model named `hang`, `crash` or `oom` makes it sleep,
  abort or allocate past any limit, as a native runtime might;
* models whose `expected.npz` (the source framework's outputs) is wrong, which any target
  exposes, since irscatter's own outputs disagree with it.

`make_corpus` writes the models and returns the faults planted, by model.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np

import irscatter
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer, Port
from irscatter.ir.writer import IRWriter

F32 = ElementType.f32
SWAPPED = ("Tanh", "Sigmoid")  # the op MisTarget gets wrong, and what it computes instead


class MisTarget:
    """irscatter as a target, Tanh computed as Sigmoid; `hang`, `crash` and `oom` models misbehave."""

    name = "mistarget"

    def __init__(self, settings=None) -> None:  # a target factory takes the campaign's settings
        self.settings = settings

    def infer(self, xml, feeds):
        text = Path(xml).read_text()
        net = re.search(r'<net name="([^"]*)"', text)
        name = net.group(1) if net else ""
        if name == "hang":
            time.sleep(3600)
        if name == "crash":
            os.abort()
        if name == "oom":
            np.ones(1 << 36, np.uint8)
        outputs = self._compiled(xml, text).run(dict(feeds))
        return [np.asarray(value) for value in outputs.values()]

    def _compiled(self, xml, text=None):
        text = (text or Path(xml).read_text()).replace(f'type="{SWAPPED[0]}"', f'type="{SWAPPED[1]}"')
        weights = Path(xml).with_suffix(".bin")
        return irscatter.parse_model(text, weights.read_bytes() if weights.is_file() else None).compile()

    def infer_steps(self, xml, steps):
        request = self._compiled(xml).new_request()
        return [[np.asarray(v) for v in request.run(dict(feeds)).values()] for feeds in steps]

    def output_names(self, xml):
        compiled = irscatter.read_model(xml).compile()
        return [sorted({spec.name, *spec.names}) for spec in compiled.outputs]

    def describe(self) -> str:
        return f"irscatter with {SWAPPED[0]} computed as {SWAPPED[1]}"

    def close(self) -> None:
        pass


def _layer(n: int, type_: str, inputs: int, attrs: dict[str, str] | None = None, version: str = "opset1") -> Layer:
    return Layer(id=n, name=f"{type_.lower()}_{n}", type=type_, version=version, attrs=attrs or {},
                 inputs=[Port(id=i) for i in range(inputs)], outputs=[Port(id=inputs)])


def _model(folder: Path, name: str, kind: str, seed: int, *, inputs: bool = True, expected: str | None = None) -> None:
    """One small model of `kind`; `expected` "right" or "wrong" writes the framework's outputs."""
    rng = np.random.default_rng(seed)
    w = IRWriter(name)
    shape = (1, 3, 6, 6) if kind == "conv" else (2, 8)
    x = w.parameter("x", F32, shape, ("x",))
    ins = [(F32, shape)]
    if kind in ("add_relu", "tanh_mul", "invalid"):
        width = 5 if kind == "invalid" else 8  # invalid: an Add of [2, 8] and [5], which validate refuses
        c = w.const("c", rng.uniform(-1, 1, width).astype(np.float32))
        first = "Add" if kind != "tanh_mul" else "Tanh"
        y = (w.copy(_layer(1, "Add", 2, {"auto_broadcast": "numpy"}), [x, c], [*ins, (F32, (width,))], [(F32, shape)])
             if first == "Add" else w.copy(_layer(1, "Tanh", 1), [x], ins, [(F32, shape)]))[0]
        second = _layer(2, "Relu", 1) if kind != "tanh_mul" else _layer(2, "Multiply", 2, {"auto_broadcast": "numpy"})
        srcs = [y] if kind != "tanh_mul" else [y, w.const("s", np.float32(2.0).reshape(()))]
        types = [(F32, shape)] if kind != "tanh_mul" else [(F32, shape), (F32, ())]
        out = w.copy(second, srcs, types, [(F32, shape)])[0]
    elif kind == "conv":
        k = w.const("k", rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32))
        attrs = {"strides": "1,1", "pads_begin": "1,1", "pads_end": "1,1", "dilations": "1,1", "auto_pad": "explicit"}
        y = w.copy(_layer(1, "Convolution", 2, attrs), [x, k], [*ins, (F32, (4, 3, 3, 3))], [(F32, (1, 4, 6, 6))])[0]
        shape = (1, 4, 6, 6)
        out = w.copy(_layer(2, "Relu", 1), [y], [(F32, shape)], [(F32, shape)])[0]
    elif kind == "matmul_tanh":
        m = w.const("m", rng.uniform(-1, 1, (8, 4)).astype(np.float32))
        y = w.copy(_layer(1, "MatMul", 2, {"transpose_a": "false", "transpose_b": "false"}), [x, m],
                   [*ins, (F32, (8, 4))], [(F32, (2, 4))])[0]
        shape = (2, 4)
        out = w.copy(_layer(2, "Tanh", 1), [y], [(F32, shape)], [(F32, shape)])[0]
    else:  # softmax
        out = w.copy(_layer(1, "Softmax", 1, {"axis": "1"}, version="opset8"), [x], ins, [(F32, shape)])[0]
    w.result("y", out, F32, shape)
    target = folder / name
    target.mkdir(parents=True)
    w.save(target / "model.xml")
    feeds = {"x": rng.uniform(-2, 2, (1, 3, 6, 6) if kind == "conv" else (2, 8)).astype(np.float32)}
    if inputs:
        np.savez(target / "inputs.npz", **feeds)
    if expected and kind != "invalid":
        y = irscatter.read_model(target / "model.xml").compile().run(feeds)["y"]
        np.savez(target / "expected.npz", y=y * 1.5 + 0.25 if expected == "wrong" else y)


# name: (kind, planted fault or None, options)
CORPUS = {
    "add_relu": ("add_relu", None, {}),
    "add_relu_random": ("add_relu", None, {"inputs": False}),
    "add_relu_expected": ("add_relu", None, {"expected": "right"}),
    "add_relu_wrong": ("add_relu", "expected differs", {"expected": "wrong"}),
    "conv_a": ("conv", None, {}),
    "conv_b": ("conv", None, {}),
    "softmax": ("softmax", None, {}),
    "softmax_wrong": ("softmax", "expected differs", {"expected": "wrong"}),
    "tanh_mul": ("tanh_mul", "diverged", {}),
    "matmul_tanh": ("matmul_tanh", "diverged", {"expected": "right"}),
    "invalid": ("invalid", "invalid", {}),
    "hang": ("add_relu", "hung", {}),
    "crash": ("add_relu", "crashed", {}),
    "oom": ("add_relu", "out of memory", {}),
}


def make_corpus(folder: Path, names=None) -> dict[str, str | None]:
    """The corpus under `folder/gen`; the planted fault of each model (None: it passes)."""
    root = folder / "gen"
    faults = {}
    for seed, (name, (kind, fault, options)) in enumerate(CORPUS.items()):
        if names is not None and name not in names:
            continue
        _model(root, name, kind, seed, **options)
        faults[f"gen/{name}"] = fault
    return faults
