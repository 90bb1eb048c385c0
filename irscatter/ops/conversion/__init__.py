"""Element-type conversion ops.
"""

from irscatter.ops.conversion import (  # noqa: F401  (importing a module registers its ops)
    convert,
    convert_like,
    convert_promote_types,
)
