"""irscatter's values as `compare` holds them: in memory within a budget, spilled beyond it.

A comparison needs irscatter's value of a tensor until the last comparison that reads it, and
layer by layer that is every tensor of the model at once. `ValueStore` is the mapping
`compare.reference_values` fills: it keeps values in memory while they fit in
`limits.compare_bytes`, and writes each further one to a temporary folder of its own, handing
back a read-only map of the file when it is read, so that the operating system pages it in
and out as the comparisons go. A model's constants are the model's own (it keeps them
decoded): they are held without being counted or written.

`needed` says which tensors a comparison reads at all: comparing the whole model's outputs
reads the model's inputs and outputs, and nothing in between unless a bisection follows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Collection, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import Any

import numpy as np

from irscatter import limits
from irscatter.runtime.interpreter import CompiledModel

Source = tuple[int, int]


def _root(array: np.ndarray) -> np.ndarray:
    """The array whose memory `array` views (itself when it owns it): holding a view holds
    all of it."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _spillable(array: np.ndarray) -> bool:
    """Whether the bytes of `array` say all of it: not Python objects or variable-width
    strings; an empty array costs nothing and maps no file."""
    return array.nbytes > 0 and not array.dtype.hasobject and array.dtype.kind != "T"


class ValueStore(MutableMapping[Source, np.ndarray]):
    """Values keyed (layer id, output position). `peak_bytes` is the most it held in memory at
    once (an array counted with the memory it views, once however many values view it);
    `spilled_bytes` and `spilled` what it wrote out. `close` removes its folder; a value read
    back before stays readable (the map outlives the file's name)."""

    def __init__(self, budget: int | None = None, borrowed: Mapping[Source, np.ndarray] | None = None) -> None:
        self.budget = limits.current().compare_bytes if budget is None else budget
        self._borrowed = set(borrowed or ())
        # what a value that views a borrowed one (a Reshape of a weight) holds is not ours either
        self._borrowed_roots = {id(root): root for root in map(_root, (borrowed or {}).values())}
        self._memory: dict[Source, np.ndarray] = {}
        self._files: dict[Source, tuple[Path, np.dtype, tuple[int, ...]]] = {}
        self._roots: dict[int, list[Any]] = {}  # id of a root -> [root, values holding it]
        self._counted: dict[Source, int] = {}  # a value held in memory and counted -> id of its root
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self.held_bytes = self.peak_bytes = self.spilled_bytes = self.spilled = 0

    @classmethod
    def for_model(cls, compiled: CompiledModel, budget: int | None = None) -> ValueStore:
        """A store that takes the Consts of `compiled` as borrowed."""
        graph = compiled.graph
        return cls(budget, {(lid, 0): graph.layers[lid].const_value for lid in graph.of_type("Const")})

    def __setitem__(self, key: Source, value: np.ndarray) -> None:
        if key in self:
            del self[key]
        array = np.asarray(value)
        if key in self._borrowed or not _spillable(array):
            self._memory[key] = array
            return
        root = _root(array)
        if id(root) in self._borrowed_roots:
            self._memory[key] = array
            return
        held = self._roots.get(id(root))
        if held is None and self.held_bytes + root.nbytes > self.budget:
            self._spill(key, array)
            return
        if held is None:
            held = self._roots[id(root)] = [root, 0]
            self.held_bytes += root.nbytes
            self.peak_bytes = max(self.peak_bytes, self.held_bytes)
        held[1] += 1
        self._counted[key] = id(root)
        self._memory[key] = array

    def _spill(self, key: Source, array: np.ndarray) -> None:
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="irscatter-values-")
        path = Path(self._folder.name) / f"{key[0]}_{key[1]}.raw"
        np.ascontiguousarray(array).tofile(path)
        self._files[key] = (path, array.dtype, array.shape)
        self.spilled_bytes += array.nbytes
        self.spilled += 1

    def __getitem__(self, key: Source) -> np.ndarray:
        if key in self._memory:
            return self._memory[key]
        path, dtype, shape = self._files[key]
        return np.memmap(path, dtype=dtype, mode="r", shape=shape)

    def __delitem__(self, key: Source) -> None:
        if key in self._files:
            self._files.pop(key)[0].unlink(missing_ok=True)
            return
        self._memory.pop(key)
        if key not in self._counted:
            return
        held = self._roots[self._counted.pop(key)]
        held[1] -= 1
        if held[1] == 0:
            del self._roots[id(held[0])]
            self.held_bytes -= held[0].nbytes

    def __contains__(self, key: object) -> bool:
        return key in self._memory or key in self._files

    def __iter__(self) -> Iterator[Source]:
        yield from self._memory
        yield from self._files

    def __len__(self) -> int:
        return len(self._memory) + len(self._files)

    def close(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None
        self._files.clear()

    def __enter__(self) -> ValueStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def summary(self) -> str:
        """One line: the most held in memory, and what went to disk."""
        line = f"irscatter's values held in memory: at most {_size(self.peak_bytes)} (budget {_size(self.budget)})"
        if self.spilled:
            line += (f"; {self.spilled} tensor{'s' if self.spilled != 1 else ''} "
                     f"({_size(self.spilled_bytes)}) spilled to a temporary folder and read back mapped")
        return line

    def to_json(self) -> dict[str, int]:
        return {"peak_bytes": self.peak_bytes, "budget_bytes": self.budget, "spilled_bytes": self.spilled_bytes,
                "spilled_tensors": self.spilled}


def needed(compiled: CompiledModel, *, every: bool, also: Collection[Source] = ()) -> frozenset[Source] | None:
    """The tensors a comparison reads: None for every one (layer by layer, or a bisection),
    else the model's inputs and outputs and `also`."""
    if every:
        return None
    outputs = {compiled.graph.producer(spec.layer.id) for spec in compiled.outputs}
    inputs = {(spec.layer.id, 0) for spec in compiled.inputs}
    return frozenset(src for src in outputs | inputs | set(also) if src is not None)


def _size(count: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"
