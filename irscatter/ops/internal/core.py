"""What several internal ops share: their inputs' dimensions named by letters and held to agree
(GatedDeltaNet's [B, T, H, K] query and [B, Hv, K, V] state share B and K), and the checks of
the packed sequence and block tables of the paged ops."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from irscatter.errors import ExecutionError
from irscatter.ir.shapes import Dimension, PartialShape
from irscatter.ops.base import Op, TensorInfo, check


def named_dims(op: Op, layout: Sequence[tuple[str, TensorInfo, str]], rank_label: str,
               shape_label: str) -> dict[str, Dimension]:
    """The dimensions of inputs given as (input name, info, one letter per axis), held to agree
    where two inputs share a letter. Returns each letter's dimension, static wherever one input
    pins it; letters of inputs of unknown rank are left out."""
    found: dict[str, tuple[Dimension, str]] = {}
    for name, info, letters in layout:
        if not info.shape.rank_is_static:
            continue
        check(info.shape.rank == len(letters), rank_label,
              f"{name} must be {len(letters)}-D [{', '.join(letters)}], found {info.shape}", port=op.port(name))
        for letter, dim in zip(letters, info.shape):
            seen = found.get(letter)
            if seen is None or (dim.is_static and not seen[0].is_static):
                if seen is not None:
                    check(seen[0].contains(dim.min), shape_label,
                          f"{name} has {letter} = {dim} where {seen[1]} has {seen[0]}", port=op.port(name))
                found[letter] = (dim, name)
                continue
            check(seen[0].compatible(dim), shape_label,
                  f"{name} has {letter} = {dim} where {seen[1]} has {seen[0]}", port=op.port(name))
    return {letter: dim for letter, (dim, _) in found.items()}


def dim_value(dims: dict[str, Dimension], letter: str) -> int | None:
    """A letter's size when it is known."""
    dim = dims.get(letter)
    return int(dim) if dim is not None and dim.is_static else None


def shape_from(dims: dict[str, Dimension], letters: str) -> PartialShape:
    """The shape whose axes are the dimensions of `letters` (dynamic where unknown)."""
    return PartialShape.of([dims.get(letter, Dimension.dynamic()) for letter in letters])


def rising_bounds(op: Op, values: np.ndarray, name: str, low: int, high: int, label: str, *,
                  first: int | None = None, last: int | None = None) -> np.ndarray:
    """A begins table (`values`, 1-D) as int64, refused under `label` unless it never falls and
    lies within [low, high], starting at `first` and ending at `last` when those are given."""
    bounds = values.astype(np.int64).reshape(-1)
    problem = None
    if bounds.size == 0:
        problem = f"{name} is empty: it needs one more value than there are sequences"
    elif (np.diff(bounds) < 0).any() or bounds[0] < low or bounds[-1] > high:
        problem = f"{name} {bounds.tolist()} must rise within [{low}, {high}]"
    elif first is not None and bounds[0] != first or last is not None and bounds[-1] != last:
        problem = f"{name} {bounds.tolist()} must run from {first} to {last}"
    if problem:
        raise ExecutionError(problem, label=label, port=op.port(name))
    return bounds
