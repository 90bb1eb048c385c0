"""How a compressed weight is held between runs (`runtime/compressed.py` chooses which): its
integer codes, and per fiber (a row of the weight, or a group of one) either a table of the
chain's value at every code (`Codebook`) or a zero point and a scale (`Arithmetic`). Each
decompresses fibers or whole rows into f32 on demand, with the bits of the decompression
layers run as written.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from irscatter.ir.element_types import ElementType
from irscatter.ops.common.codebook import look_up
from irscatter.ops.common.decompress import decompress

ELEMENTWISE = frozenset({"Convert", "Subtract", "Multiply", "Add"})  # the chain's ops on the codes' path
TABLE_CHUNK = 1 << 21  # table entries computed at once: a large weight's table is not built in one go



@dataclass(eq=False)
class Codebook:
    """A weight [rows, K] as codes [rows * fibers, length] and a table per fiber, built on first
    use by running the chain (`main`: the steps on the codes' path, `side`: those computing
    zero points and scales) on every code."""

    codes_slot: int
    codes_layer: Any
    rows: int
    fibers: int  # per weight row
    length: int  # codes per fiber
    alphabet: np.ndarray  # every code, as the codes' dtype
    side: list[Any]
    main: list[Any]  # elementwise steps, then a Reshape left out (it keeps the rows)
    widening: list[Any]  # trailing Converts from a 16-bit float, run on every pattern instead
    widened_types: tuple[ElementType, ...]  # what each of them gives
    consts: Mapping[int, Any]
    cost: int
    _built: tuple | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def decode(self, first: int, out: np.ndarray) -> None:
        """The weight's fibers [first, first + len(out)) into `out` [fibers, length], f32."""
        codes, table, widen = self.built()
        look_up(codes[first:first + len(out)], table, first, widen, out)

    def decode_rows(self, rows: np.ndarray, out: np.ndarray) -> None:
        """Weight rows `rows` into `out` [len(rows), K], f32."""
        codes, table, widen = self.built()
        fibers = _fibers_of(rows, self.fibers)
        look_up(codes[fibers], table[fibers], 0, widen, out.reshape(-1, self.length))

    def built(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(codes [rows * fibers, length], table [rows * fibers, alphabet], widening or None)."""
        if self._built is None:
            with self._lock:
                if self._built is None:
                    self._built = self._build()
        return self._built

    def _build(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        codes = _codes(self.codes_layer, self.rows * self.fibers)
        values = side_values(self.side, self.consts)
        shape = tuple(self.codes_layer.const_value.shape)
        chunk = max(1, TABLE_CHUNK // (self.fibers * len(self.alphabet)))
        table = None
        for start in range(0, self.rows, chunk):
            part = self._table_rows(values, shape, start, min(start + chunk, self.rows))
            if table is None:
                table = np.empty((self.rows * self.fibers, part.shape[1]), part.dtype)
            table[start * self.fibers:start * self.fibers + len(part)] = part
        assert table is not None  # (a codebook has rows: `_codebook` takes no weight of none)
        return codes, table, _widened(self.widening, self.widened_types) if self.widening else None

    def _table_rows(self, values: dict[int, Any], shape: tuple[int, ...], start: int, stop: int) -> np.ndarray:
        """The tables of weight rows [start, stop): the main steps run on the alphabet, with
        the zero points and scales of those rows."""
        rank = len(shape)
        current: np.ndarray = self.alphabet.reshape((1,) * (rank - 1) + (-1,))
        path = {self.codes_slot}
        for step in self.main:
            if step.layer.type in ELEMENTWISE:  # a Reshape keeps the rows, and the table has no other axis
                current = step.compute(*[current if s in path else _rows_of(values[s], rank, self.rows, start, stop)
                                         for s in step.inputs])
            path.update(step.outputs)
        current = np.broadcast_to(current, (stop - start,) + shape[1:-1] + (len(self.alphabet),))
        current = current.reshape((stop - start) * self.fibers, len(self.alphabet))
        return current.view(np.uint16) if self.widening else current


def _codes(layer: Any, fibers: int) -> np.ndarray:
    """A codes Const as [fibers, length], each code's byte."""
    return layer.const_value.view(np.uint8).reshape(fibers, -1)


def side_values(side: list[Any], consts: Mapping[int, Any]) -> dict[int, Any]:
    """The values the side steps (zero points, scales) compute, and those of the Consts, each
    decoded when first asked for (the codes, which may be unpacked from 4 bits, are not
    needed here)."""
    values = _ConstValues(consts)
    for step in side:
        values[step.outputs[0]] = step.compute(*[values[s] for s in step.inputs])
    return values


class _ConstValues(dict):
    """Values by slot; a Const's value is read on its first lookup."""

    def __init__(self, consts: Mapping[int, Any]) -> None:
        super().__init__()
        self.consts = consts

    def __missing__(self, slot: int) -> Any:
        self[slot] = value = self.consts[slot].const_value
        return value


_WIDENINGS: dict[tuple, np.ndarray] = {}


def _widened(steps: list[Any], key: tuple[ElementType, ...]) -> np.ndarray:
    """The widening Converts run on every f16 bit pattern, once per sequence of the types they
    give (a Convert's result depends on its source and destination types alone)."""
    found = _WIDENINGS.get(key)
    if found is None:
        found = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
        for step in steps:
            found = step.compute(found)
        _WIDENINGS[key] = found = np.ascontiguousarray(found)
        found.flags.writeable = False
    return found


def _rows_of(value: Any, rank: int, rows: int, start: int, stop: int) -> Any:
    """A zero point's or scale's part for weight rows [start, stop): its first axis sliced when
    it spans the rows, as is when it broadcasts along them."""
    if isinstance(value, np.ndarray) and value.ndim == rank and value.shape[0] == rows:
        return value[start:stop]
    return value


@dataclass(eq=False)
class Arithmetic:
    """A weight [rows, K] as codes [rows * fibers, length] and, per fiber, `sign` plus its zero
    point (`shift`) and its scale, decompressed by arithmetic with the chain's bits
    (`ops/common/decompress.py`)."""

    codes_layer: Any
    rows: int
    fibers: int
    length: int
    sign: int  # the codes' top bit when they are signed, else 0
    shift: np.ndarray
    scale: np.ndarray
    to_f16: bool  # whether the chain computes in f16 (else f32)
    cost: int

    @cached_property
    def codes(self) -> np.ndarray:
        """[rows * fibers, length], a byte a code (unpacked from 4 bits; see `packed`)."""
        return _codes(self.codes_layer, self.rows * self.fibers)

    @cached_property
    def packed(self) -> np.ndarray | None:
        """4-bit codes as the weights file holds them, two to a byte [rows * fibers, length / 2]
        (a fiber's code 2j in the low nibble of its byte j), when each fiber fills whole bytes;
        else None. With them, the codes are never unpacked whole: products read the file's
        bytes, and decoding unpacks the fibers it decodes."""
        data = self.codes_layer.const_data
        if data is None or data.etype.bitwidth != 4 or self.length % 2:
            return None
        return data.raw().reshape(self.rows * self.fibers, self.length // 2)

    def decode(self, first: int, out: np.ndarray) -> None:
        """The weight's fibers [first, first + len(out)) into `out` [fibers, length], f32."""
        codes, packed = self._stored()
        decompress(codes[first:first + len(out)], self.sign, self.shift, self.scale, first, self.to_f16, out, packed)

    def decode_rows(self, rows: np.ndarray, out: np.ndarray) -> None:
        """Weight rows `rows` into `out` [len(rows), K], f32."""
        fibers = _fibers_of(rows, self.fibers)
        codes, packed = self._stored()
        decompress(codes[fibers], self.sign, self.shift[fibers], self.scale[fibers], 0, self.to_f16,
                   out.reshape(-1, self.length), packed)

    def _stored(self) -> tuple[np.ndarray, bool]:
        """The codes as they are kept, and whether they are two to a byte (`packed`)."""
        packed = self.packed
        return (self.codes, False) if packed is None else (packed, True)


def _fibers_of(rows: np.ndarray, fibers: int) -> np.ndarray:
    """The fibers of weight rows `rows`, in order."""
    return (rows[:, None] * fibers + np.arange(fibers)).reshape(-1)
