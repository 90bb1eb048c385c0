"""One exception hierarchy for everything that can go wrong with a model.

Every error carries as much location as is known (file, line/column, layer, port) so that the
CLI can print a single line that points at the fault. Context is added as the error travels
outwards: a kernel knows the input, the interpreter knows the layer, the loader knows the file.
"""

from __future__ import annotations

import re

from dataclasses import dataclass


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
        where = self.location()
        what = f"{self.message} [{self.label}]" if self.label else self.message
        return f"{where}: {what}" if where else what


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


class UsageError(IRError):
    """The command line or API call itself is wrong."""

    kind = "usage"
    exit_code = 2


def elide(text: str, limit: int = 60) -> str:
    """`text` for a message: whole when short, else its start and how long it was, so that a
    hostile file's megabyte-long attribute does not come back as a megabyte-long error."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


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
