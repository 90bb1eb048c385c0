"""A finding: one thing wrong (or doubtful) about a model, with where it is and the rule's label.

The checks produce findings; `validate` prints them all, and compiling a model raises the first
error among them as a `ValidationError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from irscatter.errors import LayerRef, ValidationError


@dataclass(frozen=True)
class Finding:
    severity: Literal["error", "warning"]
    code: str
    message: str
    layer: LayerRef | None = None
    port: str | None = None
    line: int | None = None
    column: int | None = None

    def to_error(self, file: str | None) -> ValidationError:
        return ValidationError(self.message, file=file, line=self.line, layer=self.layer, port=self.port, label=self.code)
