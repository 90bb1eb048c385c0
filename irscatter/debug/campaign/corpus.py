"""The models of a campaign: folders holding a `model.xml`, found below the folders given.

A model folder holds `model.xml` (and its `model.bin`), optionally `inputs.npz` (else the
inputs are drawn at random, as `run --random` draws them) and optionally `expected.npz`, the
outputs of the framework the model was converted from. A folder given is such a folder, or a
folder searched recursively for them; the search does not descend into a model folder, nor
into the campaign's own output folder (its reproducers are model folders too).

A model's identity is the SHA-256 of its files, so that a campaign resumed after a model
changed judges it again. Hashes are remembered by path, size and modification time, so a
resumed campaign does not read every weight file again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from irscatter.errors import UsageError

MODEL_FILES = ("model.xml", "model.bin", "inputs.npz", "expected.npz")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ModelCase:
    name: str  # the folder below its corpus argument, led by that argument's own name: "models/small_cnn"
    folder: str  # absolute

    @property
    def xml(self) -> Path:
        return Path(self.folder) / "model.xml"

    def file(self, name: str) -> Path | None:
        path = Path(self.folder) / name
        return path if path.is_file() else None


def find_models(corpora: Sequence[str | os.PathLike], exclude: Iterable[str | os.PathLike] = ()) -> list[ModelCase]:
    """Every model folder below `corpora`, in the order of their names; a folder given that
    does not exist, or that holds no model, is a usage error."""
    skipped = {Path(p).resolve() for p in exclude}
    found: dict[str, ModelCase] = {}
    for corpus in corpora:
        root = Path(corpus)
        if not root.is_dir():
            raise UsageError(f"{corpus}: not a folder (a corpus is a model folder, or a folder of them)")
        top = root.resolve()
        label = top.name or "corpus"
        before = len(found)
        for folder in _model_folders(top, skipped):
            below = folder.relative_to(top).as_posix()
            name = label if below == "." else f"{label}/{below}"
            found.setdefault(str(folder), ModelCase(name, str(folder)))
        if len(found) == before:
            raise UsageError(f"{corpus}: no model.xml in it or in any folder below it")
    return sorted(found.values(), key=lambda case: (case.name, case.folder))


def _model_folders(top: Path, skipped: set[Path]) -> Iterable[Path]:
    for folder, subfolders, files in os.walk(top):
        here = Path(folder)
        if here in skipped:
            subfolders[:] = []
            continue
        if "model.xml" in files:
            subfolders[:] = []  # a model folder's own subfolders are its business
            yield here
        subfolders.sort()


HashCache = tuple[Callable[[str, int, int], str | None], Callable[[str, int, int, str], None]]


def content_hash(case: ModelCase, cache: HashCache | None = None) -> str:
    """SHA-256 over the model's files (each named, so that moving a file between names counts)."""
    whole = hashlib.sha256()
    for name in MODEL_FILES:
        path = case.file(name)
        whole.update(name.encode() + b"\0")
        whole.update((file_hash(path, cache) if path is not None else "absent").encode() + b"\0")
    return whole.hexdigest()


def file_hash(path: Path, cache: HashCache | None = None) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if cache is not None and (known := cache[0](*key)) is not None:
        return known
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    text = digest.hexdigest()
    if cache is not None:
        cache[1](*key, text)
    return text
