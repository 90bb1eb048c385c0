"""irscatter: a numpy reference interpreter and conformance tool for OpenVINO IR models."""

from irscatter import limits
from irscatter.api import Core, compile_model, parse_layer, parse_model, read_model, run_layer, validate
from irscatter.checks.conformance import Report
from irscatter.errors import (
    CompatibilityNote,
    ExecutionError,
    FileAccessError,
    IRError,
    LoadError,
    SecurityError,
    UsageError,
    ValidationError,
)
from irscatter.ir.element_types import ElementType
from irscatter.ir.graph import Edge, Graph, Layer, Model, Port
from irscatter.ir.shapes import Dimension, PartialShape

__version__ = "0.1.0"

__all__ = [
    "CompatibilityNote",
    "Core",
    "Dimension",
    "Edge",
    "ElementType",
    "ExecutionError",
    "FileAccessError",
    "Graph",
    "IRError",
    "Layer",
    "LoadError",
    "Model",
    "PartialShape",
    "Port",
    "Report",
    "SecurityError",
    "UsageError",
    "ValidationError",
    "compile_model",
    "limits",
    "parse_layer",
    "parse_model",
    "read_model",
    "run_layer",
    "validate",
]
