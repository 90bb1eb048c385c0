"""A weight given as small integer codes and a table per fiber: each element is its fiber's
table read at its code, optionally widened through a table of every 16-bit pattern.

`runtime/compressed.py` writes a compressed weight this way (the table is the decompression
run on every code), and looks it up a block of rows at a time before multiplying. Looking up
is a copy of existing values, so both paths give the same bits: numba's loop (when
`accel.enabled()`, one thread, since BLAS takes the cores between blocks) and numpy's `take`.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from irscatter.ops.common import accel


def look_up(codes: np.ndarray, table: np.ndarray, first: int, widen: np.ndarray | None, out: np.ndarray) -> np.ndarray:
    """`out[i, j] = widen[table[first + i, codes[i, j]]]` (without `widen`, the table's value
    itself), for codes [P, L] (uint8: each code's byte), a table [fibers, alphabet] and `out`
    [P, L]."""
    if accel.enabled():
        kernels = _kernels()
        if widen is None:
            kernels.direct(codes, table, first, out)
        else:
            kernels.widened(codes, table, first, widen, out)
        return out
    fibers, alphabet = codes.shape[0], table.shape[1]
    index = codes.astype(np.intp)
    index += (np.arange(first, first + fibers, dtype=np.intp) * alphabet)[:, None]
    values = table.reshape(-1).take(index)
    if widen is None:
        out[...] = values
    else:
        widen.take(values, out=out)
    return out


class _Compiled:
    def __init__(self) -> None:
        import numba

        @numba.njit(nogil=True, cache=True)
        def direct(codes, table, first, out):  # pragma: no cover - compiled
            for i in range(codes.shape[0]):
                row = table[first + i]
                for j in range(codes.shape[1]):
                    out[i, j] = row[codes[i, j]]

        @numba.njit(nogil=True, cache=True)
        def widened(codes, table, first, widen, out):  # pragma: no cover - compiled
            for i in range(codes.shape[0]):
                row = table[first + i]
                for j in range(codes.shape[1]):
                    out[i, j] = widen[row[codes[i, j]]]

        self.direct, self.widened = direct, widened


@cache
def _kernels() -> _Compiled:
    return _Compiled()
