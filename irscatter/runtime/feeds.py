"""How a fed value becomes the array a run binds to an input: checked against the input's
element type and shape, converted where OpenVINO would convert it without changing a value, and
refused with the Parameter named otherwise."""

from __future__ import annotations

from typing import Any

import numpy as np

from irscatter.errors import ExecutionError, LayerRef, note
from irscatter.ir.element_types import ElementType
from irscatter.runtime.ports import InputSpec


def checked_feed(spec: InputSpec, value: Any, file: str | None) -> np.ndarray:
    """A fed value as the input `spec` takes it, or an ExecutionError naming the Parameter: the
    common case (an array of the right type, shape and layout) as it is; another array converted
    where no value changes; a Python value read in the input's type; a feed of a dynamic-type
    input any array of an IR element type."""
    if (type(value) is np.ndarray and spec.etype is not ElementType.dynamic and value.dtype == spec.etype.dtype
            and spec.shape.accepts(value.shape) and value.flags.c_contiguous):
        return value  # the common case, checked at the cost of a run of a small layer
    ref = spec.layer.ref
    if spec.etype is ElementType.dynamic:
        array = typed_feed(value, file=file, layer=ref)
    elif isinstance(value, (np.ndarray, np.generic)) or is_openvino_tensor(value):
        array = value.data if is_openvino_tensor(value) else np.asarray(value)
        if array.dtype != spec.etype.dtype and not (spec.etype is ElementType.string and array.dtype.kind in "UTO"):
            array = _converted_feed(array, spec, file)
        if spec.etype is ElementType.string and array.dtype != spec.etype.dtype:
            array = array.astype(spec.etype.dtype)
    else:
        try:
            array = as_array(value, spec.etype.dtype)
        except ValueError as e:
            raise ExecutionError(f"the fed value cannot be read as {spec.etype}: {e}", file=file, layer=ref,
                                 label="feed-dtype") from None
    if not spec.shape.accepts(array.shape):
        raise ExecutionError(
            f"the fed array has shape {list(array.shape)}, the Parameter expects {spec.shape}", file=file, layer=ref,
            label="feed-shape",
        )
    # Row-major, as OpenVINO copies a tensor in: numpy sums an array in an order that follows
    # its memory layout, so a column-major or strided feed would change the last bits of
    # reductions (Softmax, MVN) between runs on the same values.
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def is_openvino_tensor(value: Any) -> bool:
    """An `openvino.Tensor`, told by its type's module so that openvino is never imported here."""
    return type(value).__module__.startswith("openvino") and hasattr(value, "data") and hasattr(value, "shape")


def _converted_feed(array: np.ndarray, spec: InputSpec, file: str | None) -> np.ndarray:
    """A feed of another dtype than its input's, converted as OpenVINO converts a tensor when
    every value survives the conversion (a note says so), and refused with the first value that
    would not (an f64 0.1 is no f32 value: rounding it is the caller's choice to make)."""
    wanted = spec.etype.dtype
    refuse = f"the fed array has dtype {array.dtype}, the Parameter expects {spec.etype} ({wanted})"
    try:
        ElementType.from_dtype(array.dtype)
        with np.errstate(invalid="ignore", over="ignore"):
            converted = array.astype(wanted)
            back = converted.astype(array.dtype)
    except (TypeError, ValueError):
        raise ExecutionError(refuse, file=file, layer=spec.layer.ref, label="feed-dtype") from None
    same = back == array
    if array.dtype.kind in "fcV" and wanted.kind != "b":
        same |= (back != back) & (array != array)  # NaN stays NaN
    if not same.all():
        first = array[~same].flat[0].item()
        raise ExecutionError(f"{refuse}, and {first!r} is not exactly representable in {spec.etype}: convert it first "
                             f"(.astype(np.{wanted.name})) if that rounding is what you want", file=file,
                             layer=spec.layer.ref, label="feed-dtype")
    note(f'input "{spec.name}": the {array.dtype} array was converted to {spec.etype}; every value is exact in it')
    return converted


def typed_feed(value: Any, *, file: str | None, layer: LayerRef, port: str | None = None) -> np.ndarray:
    """A feed that no declared element type converts (an input of element type `dynamic`, an
    array given to one layer run alone): any array whose dtype is an IR element type, or text
    for a string tensor. Anything else (complex, float128, dates, records, big-endian bytes,
    None) is refused with the feed-dtype label, before a kernel sees it."""
    what = "None"
    if value is not None:
        array = np.asarray(value)
        if array.dtype.kind != "O":
            try:
                ElementType.from_dtype(array.dtype)
                return array
            except ValueError:
                what = f"an array of dtype {array.dtype}"
        elif all(isinstance(v, str) for v in array.flat):  # a string tensor, as lists of str read
            return array
        else:
            what = "values that are neither numbers nor text"
    raise ExecutionError(f"the input's element type is dynamic, but {what} is of no IR element type"
                         if port is None else f"{what} is of no IR element type",
                         file=file, layer=layer, port=port, label="feed-dtype")


def as_array(value: Any, dtype: np.dtype) -> np.ndarray:
    """A Python value (a number, nested lists) as an array of `dtype`; ValueError when it makes
    none: None (which numpy would read as NaN), rows of different lengths, a number the type
    cannot hold, anything not a number.

    numpy's own conversion to `dtype` would cut 1.5 to 1 for an integer type, read the text
    "7" as a number, a None inside a list as NaN and 1e40 as an f32 infinity: the value is read
    as numpy reads it untyped first, and converted only when the type holds it (a float type
    rounds to its nearest value, as a literal in a model's source would)."""
    if value is None:
        raise ValueError("None is no value")
    try:
        if dtype.kind in "OTU":  # a string type: text is its value
            return np.asarray(value, dtype=dtype)
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise ValueError(str(e)) from None
    if raw.dtype.kind not in "biuf":
        what = "text" if raw.dtype.kind in "USTa" else f"values of numpy type {raw.dtype}" if raw.dtype.kind != "O" \
            else "what numpy reads as no number type: None, a mix of types, or an integer beyond 64 bits"
        raise ValueError(f"it holds {what}")
    with np.errstate(invalid="ignore", over="ignore"):
        out = raw.astype(dtype)
        if dtype.kind in "biu" or dtype.name.startswith(("int", "uint")):
            lost = out.astype(raw.dtype) != raw
            if lost.any():
                kind = "a truth value (0 or 1)" if dtype.kind == "b" else f"a whole number {dtype.name} can hold"
                raise ValueError(f"{raw[lost].flat[0].item()!r} is not {kind}")
        else:
            wide, got = raw.astype(np.float64), out.astype(np.float64)
            lost = np.isfinite(wide) & ~np.isfinite(got) | np.isnan(got) & ~np.isnan(wide)
            if lost.any():
                raise ValueError(f"{raw[lost].flat[0].item()!r} is beyond what {dtype.name} can hold")
    return out
