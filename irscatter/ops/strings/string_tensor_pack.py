"""StringTensorPack-15: a string tensor made of byte ranges [begins, ends) of a u8 `symbols`
buffer; the output has the shape of `begins` (and `ends`).

Choices where the spec is silent:
  * An index below 0 or past the end of `symbols`, or a begin after its end, is refused
    (`index-range`, `begins-after-ends`): at inference when the indices are constants, else
    when the layer runs. OpenVINO's kernel reads out of bounds there.
  * The ranges may come in any order, overlap or skip bytes. OpenVINO's shape inference also
    asks constant begins and ends to be ascending; its CPU plugin and its reference kernel do
    not, and neither does the spec, so irscatter does not either.
  * irscatter's string tensors hold text (numpy's StringDType), so every range must be valid
    UTF-8: a range that is not is refused with `string-utf8`, naming the element. OpenVINO
    keeps the bytes as they are (its Python API then shows U+FFFD in their place).
  * The strings' total size (the sum of ends - begins, which overlapping ranges can make far
    larger than `symbols`) goes through the tensor-size limit before any string is built.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.limits import check_allocation
from irscatter.ops.base import Op, TensorInfo, check, fail, required
from irscatter.ops.common.types import same_element_type
from irscatter.ops.registry import register

INDEX_TYPES = (ElementType.i32, ElementType.i64, ElementType.dynamic)


def _merge(a: PartialShape, b: PartialShape) -> PartialShape | None:
    """The shapes both `a` and `b` allow, or None when there is none."""
    if not a.rank_is_static:
        return b
    if not b.rank_is_static:
        return a
    if a.rank != b.rank:
        return None
    dims = []
    for x, y in zip(a, b):
        lo = max(x.min, y.min)
        hi = y.max if x.max is None else x.max if y.max is None else min(x.max, y.max)
        if hi is not None and lo > hi:
            return None
        dims.append(Dimension(min=lo, max=hi))
    return PartialShape.of(dims)


@register("StringTensorPack", 15)
class StringTensorPack(Op):
    labels = {
        "symbols-type": "symbols is not a u8 tensor",
        "symbols-rank": "symbols is not a 1-D tensor",
        "begins-ends-shape": "begins and ends have different shapes",
        "begins-after-ends": "a string's begin index lies after its end index",
    }

    inputs = ("begins", "ends", "symbols")

    def _problem(self, begins: np.ndarray, ends: np.ndarray, size: int | None) -> tuple[str, str, str] | None:
        """What is wrong with the ranges (label, message, port), or None."""
        for name, values in (("begins", begins), ("ends", ends)):
            if values.size and values.min() < 0:
                return "index-range", f"{name} holds {int(values.min())}; indices cannot be negative", self.port(name)
            if size is not None and values.size and values.max() > size:
                return ("index-range", f"{name} holds {int(values.max())}, past the end of symbols ({size} bytes)",
                        self.port(name))
        after = np.flatnonzero(begins > ends)
        if after.size:
            k = int(after[0])
            return ("begins-after-ends", f"string {k} begins at {int(begins[k])}, after its end {int(ends[k])}",
                    self.port("begins"))
        return None

    def infer(self, begins: TensorInfo, ends: TensorInfo, symbols: TensorInfo) -> TensorInfo:
        for name, info in (("begins", begins), ("ends", ends)):
            check(info.etype in INDEX_TYPES, "index-type", f"{name} must be i32 or i64, found {info.etype}",
                  port=self.port(name))
        same_element_type(begins, ends, "begins and ends must share one element type", "same-element-type",
                          self.port("ends"))
        check(symbols.etype in (ElementType.u8, ElementType.dynamic), "symbols-type",
              f"symbols must be u8, found {symbols.etype}", port=self.port("symbols"))
        check(not symbols.shape.rank_is_static or symbols.shape.rank == 1, "symbols-rank",
              f"symbols must be a 1-D tensor, found {symbols.shape}", port=self.port("symbols"))
        shape = required(_merge(begins.shape, ends.shape), "begins-ends-shape",
                         f"begins {begins.shape} and ends {ends.shape} must have the same shape", port=self.port("ends"))
        if begins.value is not None and ends.value is not None:
            size = int(symbols.shape[0]) if symbols.shape.is_static else None
            problem = self._problem(begins.value.reshape(-1), ends.value.reshape(-1), size)
            if problem is not None:
                label, message, port = problem
                fail(label, message, port=port)
        return TensorInfo(ElementType.string, shape)

    def compute(self, begins: np.ndarray, ends: np.ndarray, symbols: np.ndarray) -> np.ndarray:
        if begins.shape != ends.shape:
            raise ExecutionError(f"begins {list(begins.shape)} and ends {list(ends.shape)} must have the same shape",
                                 label="begins-ends-shape", port=self.port("ends"))
        starts, stops = begins.astype(np.int64).reshape(-1), ends.astype(np.int64).reshape(-1)
        problem = self._problem(starts, stops, symbols.size)
        if problem is not None:
            label, message, port = problem
            raise ExecutionError(message, label=label, port=port)
        check_allocation([int((stops - starts).sum())], 1)
        buffer = symbols.tobytes()
        pieces = list(map(buffer.__getitem__, map(slice, starts.tolist(), stops.tolist())))
        try:
            texts = list(map(bytes.decode, pieces))
        except UnicodeDecodeError:
            k, why = _first_undecodable(pieces)
            raise ExecutionError(f"string {k} (bytes {int(starts[k])} to {int(stops[k])} of symbols) is not valid "
                                 f"UTF-8 ({why}); string tensors hold text", label="string-utf8",
                                 port=self.port("symbols")) from None
        return np.array(texts, dtype=ElementType.string.dtype).reshape(begins.shape)


def _first_undecodable(pieces: list[bytes]) -> tuple[int, str]:
    """Which piece does not decode, and why (only reached once decoding has failed)."""
    for k, piece in enumerate(pieces):
        try:
            piece.decode()
        except UnicodeDecodeError as e:
            return k, e.reason
    raise AssertionError("every piece decodes")
