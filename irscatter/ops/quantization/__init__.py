"""Quantization: FakeQuantize and FakeConvert."""
