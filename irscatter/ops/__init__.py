"""The op library: one subpackage per family, one module per op type (holding all its versions);
element-wise ops that differ only in their numpy function are rows of a table instead.
See ARCHITECTURE.md for where a new op goes. A module is imported, registering its ops, when a
model first names one of them (`registry`, `catalog.py`); `registry.load_all()` imports them all."""

from __future__ import annotations

import importlib
from typing import Any

# The function forms of irscatter's own opset irscatter1 and of PagedAttentionExtension: numpy
# arrays in, numpy arrays out; imported when first asked for.
_FUNCTIONS = {
    "bnns_scatter": "irscatter.ops.irscatter1.bnns_scatter",
    "hlo_scatter": "irscatter.ops.irscatter1.hlo_scatter",
    "paddle_scatter": "irscatter.ops.irscatter1.paddle_scatter",
    "paged_attention": "irscatter.ops.internal.paged_attention_extension",
    "paged_scatter_update": "irscatter.ops.irscatter1.paged_scatter_update",
}

__all__ = sorted(_FUNCTIONS)


def __getattr__(name: str) -> Any:
    if name in _FUNCTIONS:
        return getattr(importlib.import_module(_FUNCTIONS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
