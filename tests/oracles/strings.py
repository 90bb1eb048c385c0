"""Oracles of the string ops: StringTensorPack-15 and StringTensorUnpack-15, one string per
Python step, as the spec describes them: string i is the bytes symbols[begins[i]:ends[i]]
(read as UTF-8, since irscatter's string tensors hold text), and unpacking lays the strings'
UTF-8 bytes one after another, each string's range [begin, end) following the previous one.
"""

from __future__ import annotations

import itertools

import numpy as np


def string_tensor_pack(begins, ends, symbols):
    out = np.empty(begins.shape, dtype=np.dtypes.StringDType())
    for index in itertools.product(*(range(d) for d in begins.shape)):
        text = bytes(int(symbols[k]) for k in range(int(begins[index]), int(ends[index])))
        out[index] = text.decode("utf-8")
    return out


def string_tensor_unpack(data):
    begins = np.zeros(data.shape, np.int32)
    ends = np.zeros(data.shape, np.int32)
    symbols = []
    for index in itertools.product(*(range(d) for d in data.shape)):
        begins[index] = len(symbols)
        symbols.extend(str(data[index]).encode("utf-8"))
        ends[index] = len(symbols)
    return begins, ends, np.array(symbols, np.uint8)
