"""One exception hierarchy for everything that can go wrong with a model.

Every error carries as much location as is known (file, line/column, layer, port) so that the
CLI can print a single line that points at the fault. Context is added as the error travels
outwards: a kernel knows the input, the interpreter knows the layer, the loader knows the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LayerRef:
    """Identifies a layer in messages: id, friendly name, type and resolved op version."""

    id: int | str
    name: str
    type: str
    version: str  # "15" for a resolved op version, else the raw opset string

    def __str__(self) -> str:
        if self.version.isascii() and self.version.isdigit():
            label = f"{self.type}-{self.version}"
        else:
            label = f"{self.type}, {self.version}" if self.version else self.type
        return f'layer {self.id} "{self.name}" ({label})'


class IRError(Exception):
    """Base class of every error irscatter reports about a model, its files or its inputs."""

    kind = "error"
    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        layer: LayerRef | None = None,
        port: str | None = None,
        label: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.layer = layer
        self.port = port
        self.label = label

    def add_context(
        self,
        *,
        file: str | None = None,
        line: int | None = None,
        layer: LayerRef | None = None,
        port: str | None = None,
    ) -> IRError:
        """Fill in location fields that are still unknown; returns self for `raise e.add_context(...)`."""
        if self.file is None and file is not None:
            self.file = file
        if self.line is None and line is not None:
            self.line = line
        if self.layer is None and layer is not None:
            self.layer = layer
        if self.port is None and port is not None:
            self.port = port
        return self

    def location(self) -> str:
        parts = []
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            parts.append(where)
        if self.layer is not None:
            parts.append(str(self.layer) + (f" {self.port}" if self.port else ""))
        elif self.port:
            parts.append(self.port)
        return ": ".join(parts)

    def __str__(self) -> str:
        return self.rendered(self.message)

    def rendered(self, message: str) -> str:
        """The error as one line, located, with `message` for what went wrong."""
        # One line whatever went into it (a library's message with its trailing newline, a
        # file's name or attribute with controls in it), of a length a terminal can show.
        where = self.location()
        message = str(message).strip()
        what = f"{message} [{self.label}]" if self.label else message
        return elide(f"{where}: {what}" if where else what, MESSAGE_LIMIT)


class LoadError(IRError):
    """The files could not be turned into a graph: malformed XML, bad dims, weights out of range."""

    kind = "load"


class FileAccessError(LoadError):
    """A file named by the user does not exist or cannot be read."""

    exit_code = 2


class SecurityError(LoadError):
    """The XML contains constructs irscatter refuses outright (DOCTYPE, entities, ...)."""

    kind = "security"


class ValidationError(IRError):
    """The graph is well-formed but violates a rule of the IR format or of an op's spec."""

    kind = "validation"


class ExecutionError(IRError):
    """Running the model failed: bad feeds, or an input value the op's spec forbids."""

    kind = "execution"


@dataclass(frozen=True)
class Argument:
    """An argument of a library call, named by its Python keyword inside a usage error's
    message, where a caller that takes it under another name puts that name instead."""

    keyword: str

    def __str__(self) -> str:
        return self.keyword


class UsageError(IRError):
    """The command line or API call itself is wrong.

    `argument` is the keyword of the library call's argument at fault (`shapes`, `target`), and
    `value` what it was given. The message comes in parts, the arguments it speaks of among them
    as `Argument`s (the first of them is `argument` unless it is given): `str(error)` names
    them by their keywords, and `worded(names)` by the names a caller gave them, so that a
    program which fed the call from its own options (the command line, from its flags) says
    the message in its own terms, and the library never speaks of those."""

    kind = "usage"
    exit_code = 2

    def __init__(self, *parts: str | Argument, argument: str | None = None, value: Any = None,
                 **context: Any) -> None:
        super().__init__("".join(map(str, parts)), **context)
        self.parts = parts
        named = [part.keyword for part in parts if isinstance(part, Argument)]
        self.argument = argument if argument is not None else (named[0] if named else None)
        self.value = value

    def worded(self, names: Mapping[str, str]) -> str:
        """The error's line with each argument its message speaks of named as `names` calls it
        (by keyword where `names` lacks it)."""
        return self.rendered("".join(names.get(part.keyword, part.keyword) if isinstance(part, Argument) else part
                                 for part in self.parts))


# Characters that must not reach a terminal raw: C0 and C1 controls (a newline would start a
# forged second "irscatter: error:" line, an escape sequence drives the terminal), and the
# Unicode line separators and direction overrides, which reorder or break what is shown.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# How long one error line may grow: long enough for every message irscatter writes itself,
# short enough that a file's megabyte-long name or a cycle through 20 000 layers is cut.
MESSAGE_LIMIT = 600


def _escaped(char: re.Match) -> str:
    c = char.group()
    return _ESCAPES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def elide(text: str, limit: int = 60) -> str:
    """`text` for a message, on one line: control characters escaped, and whole when short,
    else its start and end around how long it was, so that a hostile file's megabyte-long
    attribute does not come back as a megabyte-long error, nor one that spans lines."""
    text = _UNPRINTABLE.sub(_escaped, text)
    if len(text) <= limit:
        return text
    tail = max(limit // 3, 1) if limit >= 12 else 0
    head = limit - tail
    return f"{text[:head]}...({len(text)} characters)...{text[len(text) - tail:]}" if tail else \
        f"{text[:head]}... ({len(text)} characters)"


# What `re.compile` raises for a pattern it cannot compile: re.error, and for a huge repeat
# (a{99999999999}) or deep nesting OverflowError and RecursionError.
PATTERN_ERRORS = (re.error, OverflowError, RecursionError)


class CompatibilityNote(UserWarning):
    """Something irscatter took as OpenVINO's API takes it but has no use for (a device name, a
    speed setting): said once as a warning of this category, which `warnings.filterwarnings`
    can silence."""


def note(message: str) -> None:
    import warnings

    warnings.warn(message, CompatibilityNote, stacklevel=4)  # the caller of the API function
