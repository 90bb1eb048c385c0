"""Quantization: FakeQuantize and FakeConvert."""

from irscatter.ops.quantization import (  # noqa: F401  (importing a module registers its ops)
    fake_convert,
    fake_quantize,
)
