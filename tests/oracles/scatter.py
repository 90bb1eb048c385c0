"""OpenVINO's scatters (ScatterUpdate, ScatterElementsUpdate, ScatterNDUpdate), one Python step per
updated element, transcribed from the specs' sequential definitions; and the reduction step all
scatter oracles share (`apply_updates`, `work_copy`)."""

from __future__ import annotations

import numpy as np


def _combine(reduction, current, update, is_bool):
    if reduction == "none":
        return update
    if is_bool:
        return {"sum": current or update, "max": current or update, "prod": current and update,
                "min": current and update, "sub": current != update}[reduction]
    return {"sum": lambda: current + update, "mean": lambda: current + update, "sub": lambda: current - update,
            "prod": lambda: current * update, "min": lambda: min(current, update),
            "max": lambda: max(current, update)}[reduction]()


def _identity(reduction, dtype):
    if reduction in ("sum", "sub", "mean"):
        return dtype.type(0)
    if reduction == "prod":
        return dtype.type(1)
    if dtype == np.bool_:
        return reduction == "min"
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return dtype.type(info.max if reduction == "min" else info.min)


def work_copy(data):
    """f16/bf16 are computed in f32, as the kernels (and OpenVINO's reference) do."""
    if data.dtype.kind == "f" or data.dtype.name == "bfloat16":
        return data.astype(np.float32) if data.dtype.itemsize < 4 else data.copy()
    return data.copy()


def apply_updates(out, targets, updates, reduction, use_init_val):
    """`targets` lists (output coordinate, update value) in the order the spec visits them."""
    is_bool = out.dtype == np.bool_
    counts: dict = {}
    for coord, value in zip(targets, updates):
        if coord not in counts:
            counts[coord] = 0
            if not use_init_val and reduction != "none":
                out[coord] = _identity(reduction, out.dtype)
        counts[coord] += 1
        out[coord] = _combine(reduction, out[coord], out.dtype.type(value), is_bool)
    if reduction == "mean":
        for coord, n in counts.items():
            n += 1 if use_init_val else 0
            out[coord] = out[coord] // n if out.dtype.kind in "iu" else out[coord] / out.dtype.type(n)
    return out


def scatter_elements(data, indices, updates, axis, reduction="none", use_init_val=True):
    out = work_copy(data)
    axis %= data.ndim
    targets, values = [], []
    for c in np.ndindex(*indices.shape):
        i = int(indices[c])
        i = i + data.shape[axis] if i < 0 else i
        coord = list(c)
        coord[axis] = i
        targets.append(tuple(coord))
        values.append(updates[c])
    return apply_updates(out, targets, [np.asarray(v).astype(out.dtype) for v in values], reduction, use_init_val)


def scatter_nd(data, indices, updates, reduction="none"):
    out = work_copy(data)
    k = indices.shape[-1]
    targets, values = [], []
    for j in np.ndindex(*indices.shape[:-1]):
        start = tuple(int(v) + data.shape[t] if v < 0 else int(v) for t, v in enumerate(indices[j]))
        for w in np.ndindex(*data.shape[k:]):
            targets.append(start + w)
            values.append(np.asarray(updates[j + w] if updates.ndim else updates).astype(out.dtype))
    return apply_updates(out, targets, values, reduction, True)


def scatter_update(data, indices, updates, axis):
    out = work_copy(data)
    axis %= data.ndim
    targets, values = [], []
    for pre in np.ndindex(*data.shape[:axis]):
        for i in np.ndindex(*indices.shape):
            for post in np.ndindex(*data.shape[axis + 1:]):
                targets.append(pre + (int(indices[i]),) + post)
                values.append(np.asarray(updates[pre + i + post]).astype(out.dtype))
    # The spec visits updates in the row-major order of `indices`; for the last-write-wins choice
    # only the order among updates of the same target matters, which is that order here too.
    return apply_updates(out, targets, values, "none", True)
