"""The interpreter and what runs beside it: planning, buffers, profiling, regions, inputs.

Importing the runtime hands the op library its way of compiling a layer's `<body>`: ops never
import the runtime, the runtime installs itself below them.
"""

from irscatter.ops.base import set_body_compiler
from irscatter.runtime.region import Region
from irscatter.runtime.subgraph import Subgraph

set_body_compiler(Region, "region")
set_body_compiler(Subgraph, "subgraph")
