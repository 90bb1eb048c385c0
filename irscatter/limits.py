"""Resource limits: how large a file, a document and a tensor irscatter agrees to handle.

IR files come from converters, from other people and from the network. Every size a file
can ask for is checked against these limits before anything of that size is read, parsed
or allocated, so a hostile or broken file ends in one clear error instead of a MemoryError,
a hang or a machine out of memory.

The defaults suit the models irscatter is meant for and stay well inside a workstation;
change them for one block of code with `with irscatter.limits.using(tensor_bytes=...):`,
or for the process with `irscatter.limits.configure(...)`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from irscatter.errors import ExecutionError, UsageError, ValidationError


@dataclass(frozen=True)
class Limits:
    xml_bytes: int = 512 * 2**20  # size of the .xml file (or document in memory)
    xml_elements: int = 10_000_000  # elements in the document
    xml_depth: int = 128  # element nesting (libxml2 itself stops at 256)
    xml_attributes: int = 10_000  # attributes of any one element
    body_depth: int = 8  # sub-graph bodies nested in sub-graph layers
    tensor_elements: int = 2**32  # elements of any one tensor, inferred or computed
    tensor_bytes: int = 4 * 2**30  # bytes of any one tensor
    loop_iterations: int = 1_000_000  # iterations of all Loops and TensorIterators in one run, nested ones included
    npz_bytes: int = 8 * 2**30  # bytes of all the arrays of one .npz file together (feeds, expected values, dumps)
    pipe_wait_seconds: int = 60  # how long reading a named pipe given as the .xml may take, to its end
    # Not a refusal but a budget: the values of layers that depend on Consts alone (decompressed
    # weights) that a compiled model keeps, rather than computing them on every run. Set at
    # compile time; past it, the rest are computed each run (0: always).
    folded_bytes: int = 4 * 2**30
    # A budget too: irscatter's values that `compare` holds in memory for the comparisons still
    # to come. Past it, each further value is written to a temporary folder of compare's and
    # read back mapped from there (0: every value spilled).
    compare_bytes: int = 4 * 2**30


# The values each limit may take. Past them a limit stops meaning anything and starts breaking
# what enforces it: libxml2 nests elements at most 256 deep (and the depth check is an XPath of
# that many steps), numpy describes no array of 2^63 bytes, and select() and the timers take no
# wait past a few centuries.
RANGES: dict[str, tuple[int, int]] = {
    "xml_bytes": (1, 2**40),
    "xml_elements": (1, 2**40),
    "xml_depth": (1, 256),
    "xml_attributes": (1, 2**31),
    "body_depth": (0, 64),
    "tensor_elements": (1, 2**62),
    "tensor_bytes": (1, 2**62),
    "loop_iterations": (1, 2**40),
    "npz_bytes": (1, 2**62),
    "pipe_wait_seconds": (1, 7 * 24 * 3600),
    "folded_bytes": (0, 2**62),
    "compare_bytes": (0, 2**62),
}

# Inference folds a layer whose inputs are all known values when its output has at most
# FOLD_LIMIT elements, so that ops whose output shape depends on an input's value (an axis,
# a target shape) can be resolved. A Const is such a known value when it fits in one page
# (CARRY_BYTES): shapes, axes and indices do, and weights stay unread until a run.
FOLD_LIMIT = 4096
CARRY_BYTES = 4096

_current = Limits()


def current() -> Limits:
    return _current


def configure(**changes: int) -> Limits:
    """Change the process-wide limits (only the named ones); returns the previous limits.
    A name that is no limit, or a value outside the limit's `RANGES`, is a UsageError."""
    global _current
    for name, value in changes.items():
        if name not in RANGES:
            raise UsageError(f'"{name}" is no limit (the limits: {", ".join(RANGES)})')
        low, high = RANGES[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UsageError(f"the limit {name} takes a whole number from {low} to {high}, not {value!r}")
    previous = _current
    _current = dataclasses.replace(_current, **changes)
    return previous


@contextlib.contextmanager
def using(**changes: int) -> Iterator[Limits]:
    """Other limits for the duration of a `with` block."""
    previous = configure(**changes)
    try:
        yield _current
    finally:
        configure(**dataclasses.asdict(previous))


def tensor_size_problem(shape: Sequence[int], itemsize: float) -> str | None:
    """Why a tensor of `shape` must not be made, or None when it is within the limits.
    Python integers do not overflow, so a product of huge dims is compared exactly."""
    count = math.prod(shape)
    limits = _current
    if 0 < count <= limits.tensor_elements and count * itemsize <= limits.tensor_bytes:
        return None  # (the common answer, asked for every output inference gives)
    if count > limits.tensor_elements:
        return (f"a tensor of shape {list(shape)} has {count} elements, over the limit of "
                f"{limits.tensor_elements} (irscatter.limits: tensor_elements)")
    nbytes = math.ceil(count * itemsize)
    if nbytes > limits.tensor_bytes:
        return (f"a tensor of shape {list(shape)} takes {nbytes} bytes, over the limit of "
                f"{limits.tensor_bytes} (irscatter.limits: tensor_bytes)")
    # an empty tensor holds nothing, but numpy still multiplies its other dims (into the
    # strides): past 2^63 bytes it cannot even describe the array
    spread = math.prod(d for d in shape if d != 0) * max(1, math.ceil(itemsize))
    if count == 0 and spread >= 2**63:
        return (f"a tensor of shape {list(shape)} is empty, but its other dims span {spread} bytes, "
                f"more than numpy can describe (irscatter.limits: tensor_elements)")
    return None


def check_inferred(shape: Sequence[int], itemsize: float, port: str) -> None:
    """At inference: a static output shape that would be too large to compute."""
    if (problem := tensor_size_problem(shape, itemsize)) is not None:
        raise ValidationError(problem, port=port, label="tensor-limit")


def check_allocation(shape: Sequence[int], itemsize: float, port: str = "output 0") -> None:
    """In a kernel, before it makes a tensor whose shape comes from input values."""
    if (problem := tensor_size_problem(shape, itemsize)) is not None:
        raise ExecutionError(problem, port=port, label="tensor-limit")
