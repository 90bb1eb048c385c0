"""What the commands share in what they print and write: progress bars, notes, where an output
file goes and the refusal of a path the system will not write, outputs shown as text or JSON,
and the argparse types of counts, tolerances and timeouts."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from irscatter.errors import MESSAGE_LIMIT, CompatibilityNote, UsageError, elide

PROG = "irscatter"


@contextlib.contextmanager
def progress(args: argparse.Namespace, unit: str,
             delay: float = 0.0) -> Iterator[Callable[[int, int | None], None] | None]:
    """A progress bar on stderr for long work (`callback(done, total)`; total None when it is not
    known), or None: not on a terminal, or with --quiet. With `delay`, it shows only once the
    work has taken that long (reading a small model draws nothing). Bytes ("B") count in kB, MB."""
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    unit_options = {"unit": "B", "unit_scale": True} if unit == "B" else {"unit": f" {unit}"}
    with tqdm(file=sys.stderr, leave=False, dynamic_ncols=True, delay=delay, **unit_options) as bar:
        def update(done: int, total: int | None) -> None:
            if total is not None and bar.total != total:
                bar.total = total
            bar.update(done - bar.n)
        yield update


def show_note(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ARG001 (warnings' hook)
    """What the library says as a `CompatibilityNote` (a feed converted, a setting left unused),
    as one note line; any other warning as Python prints it."""
    if issubclass(category, CompatibilityNote):
        note(str(message))
    else:
        print(warnings.formatwarning(message, category, filename, lineno, line), file=sys.stderr, end="")


def note(text: str) -> None:
    """A note on stderr, one line as errors are: it may quote a model's input names."""
    print(f"{PROG}: note: {elide(text, MESSAGE_LIMIT)}", file=sys.stderr)


def preview(array: np.ndarray) -> str:
    with np.printoptions(threshold=12, edgeitems=3, precision=5, linewidth=100):
        text = np.array2string(np.asarray(array), separator=", ")
    return "\n".join(line.rstrip() for line in text.replace("\n", "\n    ").split("\n"))


def as_json(value: np.ndarray) -> dict[str, Any]:
    """An output as JSON: element type, shape and the values as nested lists. Floats are written
    with the shortest digits of their own type (0.1 for an f32 0.1, not 0.10000000149011612),
    and NaN and the infinities, which JSON lacks, as the strings "nan", "inf" and "-inf"."""
    array = np.asarray(value)
    if array.dtype.kind == "f" or array.dtype.name.startswith(("bfloat16", "float8")):
        texts = (array if array.dtype.kind == "f" else array.astype(np.float32)).astype(str).ravel()
        numbers = [float(t) for t in texts]
        flat = [n if np.isfinite(n) else t for n, t in zip(numbers, texts)]
        values = np.array(flat, dtype=object).reshape(array.shape).tolist()
    elif array.dtype.kind == "S":
        values = np.char.decode(array, "utf-8", "replace").tolist()
    else:
        values = array.tolist()
    return {"element_type": str(array.dtype), "shape": list(array.shape), "values": values}


def output_path(name: str, flag: str = "--output", suffix: str = ".npz", *, folder_made: bool = False) -> str:
    """Where --output (or --dump, or extract's -o) writes: the name as given when it ends in
    `suffix`, else with it added (as numpy does for .npz); a directory, or a missing folder
    (unless the writer makes it, as extract does for its files), is refused before anything is
    computed."""
    path = Path(name)
    if path.is_dir():
        raise UsageError(f"{flag} {name} is a directory; give a file name, e.g. {path / ('outputs' + suffix)}")
    if path.suffix != suffix:
        path = path.with_name(path.name + suffix)
    if not path.parent.is_dir() and not (folder_made and not path.parent.exists()):
        raise UsageError(f"{flag} {name}: the folder {path.parent} does not exist")
    return str(path)


@contextlib.contextmanager
def writing(flag: str, path: str | Path) -> Iterator[None]:
    """Around every file the CLI writes: a path the system refuses (a read-only /sys or /proc,
    a full disk or /dev/full, no permission) is the user's to change, so it is a usage error
    naming the path and the system's reason, not an internal one."""
    try:
        yield
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise UsageError(f"{flag} {path}: cannot write there: {reason}") from None


def report_path(name: str) -> str:
    """Where --report writes, as given; a directory, a missing folder or a missing matplotlib
    is refused before anything is computed."""
    from irscatter.debug import html

    path = Path(name)
    if path.is_dir():
        raise UsageError(f"--report {name} is a directory; give a file name, e.g. {path / 'report.html'}")
    if not path.parent.is_dir():
        raise UsageError(f"--report {name}: the folder {path.parent} does not exist")
    try:
        html.require_matplotlib()
    except UsageError:
        missing = f"--report draws its chart with matplotlib, which is not installed: {html.INSTALL_HINT}"
        raise UsageError(missing) from None
    return name


def count(minimum: int):
    """An argparse type: an integer of at least `minimum`."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return value
    return parse


def tolerance(text: str) -> float:
    """An argparse type: a finite number of at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value >= 0 and np.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number of at least 0")
    return value


# The longest wait a timeout may ask for: a week is past any check worth waiting on, and far
# inside what the timers and select() accept (1e308 seconds overflows them).
MOST_SECONDS = 7 * 24 * 3600


def seconds(text: str) -> float:
    """An argparse type: a timeout, a number of seconds above 0 and at most a week."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MOST_SECONDS:  # (NaN and the infinities too)
        raise argparse.ArgumentTypeError(f"{text} seconds: give more than 0 and at most {MOST_SECONDS} (a week)")
    return value
