"""Control flow: If, Loop and TensorIterator, whose bodies run through the same interpreter.
"""

from irscatter.ops.control import (  # noqa: F401  (importing a module registers its ops)
    if_,
    loop,
    tensor_iterator,
)
