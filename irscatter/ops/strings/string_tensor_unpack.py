"""StringTensorUnpack-15: a string tensor to the byte ranges [begins, ends) of its strings in one
u8 `symbols` buffer (each string's UTF-8 bytes, one after the other, in row-major order).

`begins` and `ends` (i32) have the data's shape; `symbols` has as many bytes as the strings
together, known at inference only when the data is a constant (it is then folded). A string
holding a lone surrogate (possible in a tensor fed from Python) has no UTF-8 form and is
refused with `string-utf8`. More bytes than int32 ends can index are refused with
`unpack-size`.
"""

from __future__ import annotations

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.element_types import ElementType
from irscatter.ir.shapes import PartialShape
from irscatter.ops.base import Op, TensorInfo, check
from irscatter.ops.registry import register

INT32_MAX = 2**31 - 1


@register("StringTensorUnpack", 15)
class StringTensorUnpack(Op):
    labels = {
        "string-input": "data is not a string tensor",
        "unpack-size": "the strings hold more bytes than int32 begins and ends can index",
    }

    inputs = ("data",)
    outputs = 3

    def infer(self, data: TensorInfo) -> tuple[TensorInfo, TensorInfo, TensorInfo]:
        check(data.etype in (ElementType.string, ElementType.dynamic), "string-input",
              f"data must be a string tensor, found {data.etype}", port=self.port("data"))
        if data.value is not None:
            begins, ends, symbols = self.compute(data.value)
            return (TensorInfo.of(begins), TensorInfo.of(ends), TensorInfo.of(symbols))
        return (TensorInfo(ElementType.i32, data.shape), TensorInfo(ElementType.i32, data.shape),
                TensorInfo(ElementType.u8, PartialShape.of([-1])))

    def compute(self, data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        texts = data.reshape(-1).tolist()
        try:
            encoded = list(map(str.encode, texts))
        except UnicodeEncodeError:
            k = next(k for k, t in enumerate(texts) if not _encodes(t))
            raise ExecutionError(f"string {k} holds a lone surrogate, which has no UTF-8 form", label="string-utf8",
                                 port=self.port("data")) from None
        lengths = np.fromiter(map(len, encoded), np.int64, count=len(encoded))
        ends = np.cumsum(lengths)
        if ends.size and ends[-1] > INT32_MAX:
            raise ExecutionError(f"the strings hold {int(ends[-1])} bytes, more than int32 ends can index",
                                 label="unpack-size", port=self.port("data"))
        begins = ends - lengths
        symbols = np.frombuffer(b"".join(encoded), np.uint8).copy()
        return (begins.astype(np.int32).reshape(data.shape), ends.astype(np.int32).reshape(data.shape), symbols)


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True
