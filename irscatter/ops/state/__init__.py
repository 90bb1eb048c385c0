"""Model state: ReadValue and Assign, the variables a compiled model keeps across calls.
"""

from irscatter.ops.state import (  # noqa: F401  (importing a module registers its ops)
    assign,
    read_value,
)
