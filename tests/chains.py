"""Long chains of layers with one planted divergence, for the tests of `compare`.

A chain adds, scales, negates and scales back, so that its values stay bounded, every float
layer agrees with OpenVINO's CPU plugin to a few ulps, and a difference made early is carried
to the output rather than squashed. The planted layer is an integer Divide with
`m_pythondiv="true"` on negative values: the spec rounds the quotient down (floor), and the CPU
plugin truncates toward zero, so OpenVINO departs from irscatter there and nowhere else. It
sits between a Floor and Converts to i32 and back, which are exact on both sides.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Layer, Port
from irscatter.ir.writer import IRWriter, Tensor

F32, I32 = ElementType.f32, ElementType.i32


def _layer(n: int, type_: str, version: str, inputs: int, attrs: dict[str, str] | None = None) -> Layer:
    return Layer(id=n, name=f"{type_.lower()}_{n}", type=type_, version=version, attrs=attrs or {},
                 inputs=[Port(id=i) for i in range(inputs)], outputs=[Port(id=inputs)])


def chain(folder: Path, layers: int, planted_at: int | None, shape: tuple[int, ...] = (4, 64),
          name: str = "chain") -> tuple[Path, dict[str, np.ndarray], str | None]:
    """A chain of about `layers` layers, the planted Divide at position `planted_at` (or
    none); returns the xml, feeds, and the planted layer's name."""
    writer = IRWriter(name)
    x = writer.parameter("x", F32, shape, ("x",))
    typed = [(F32, shape)]
    rng = np.random.default_rng(7)
    current: Tensor = x
    count, planted = 0, None
    scale = np.ones(shape[-1], np.float32)

    def add(layer: Layer, sources: list[Tensor], ins: list, out) -> Tensor:
        nonlocal count
        count += 1
        return writer.copy(layer, sources, ins, [out])[0]

    while count < layers:
        if planted_at is not None and planted is None and count >= planted_at - 2:
            four = writer.const(f"four_{count}", np.float32(4.0).reshape(()))
            current = add(_layer(count, "Multiply", "opset1", 2), [current, four], [(F32, shape), (F32, ())], (F32, shape))
            current = add(_layer(count, "Floor", "opset1", 1), [current], typed, (F32, shape))
            current = add(_layer(count, "Convert", "opset1", 1, {"destination_type": "i32"}), [current], typed,
                          (I32, shape))
            divisor = writer.const(f"divisor_{count}", np.array(-3, np.int32).reshape(()))
            divide = _layer(count, "Divide", "opset1", 2, {"m_pythondiv": "true", "auto_broadcast": "numpy"})
            planted = divide.name
            current = add(divide, [current, divisor], [(I32, shape), (I32, ())], (I32, shape))
            current = add(_layer(count, "Convert", "opset1", 1, {"destination_type": "f32"}), [current],
                          [(I32, shape)], (F32, shape))
            continue
        kind = count % 4
        if kind == 0:
            c = writer.const(f"c_{count}", rng.uniform(-1, 1, shape[-1]).astype(np.float32))
            current = add(_layer(count, "Add", "opset1", 2), [current, c], [(F32, shape), (F32, shape[-1:])], (F32, shape))
        elif kind in (1, 3):  # a scale, then its inverse: values stay bounded, and differences are kept
            scale = rng.uniform(0.5, 1.5, shape[-1]).astype(np.float32) if kind == 1 else (1 / scale).astype(np.float32)
            c = writer.const(f"c_{count}", scale)
            current = add(_layer(count, "Multiply", "opset1", 2), [current, c], [(F32, shape), (F32, shape[-1:])],
                          (F32, shape))
        else:
            current = add(_layer(count, "Negative", "opset1", 1), [current], typed, (F32, shape))
    writer.result("y", current, F32, shape)
    xml = writer.save(folder / f"{name}.xml")
    feeds = {"x": np.random.default_rng(0).uniform(-3, 3, shape).astype(np.float32)}
    return xml, feeds, planted

