"""The op library: one subpackage per family, one module per op type (holding all its versions);
element-wise ops that differ only in their numpy function are rows of a table instead.
See ARCHITECTURE.md for where a new op goes. Importing this package registers every op."""

from irscatter.ops import (  # noqa: F401  (the families)
    activation,
    control,
    conversion,
    convolution,
    detection,
    detectron,
    elementwise,
    generation,
    image,
    indexing,
    infrastructure,
    internal,
    irscatter1,
    matrix,
    movement,
    normalization,
    pooling,
    quantization,
    recurrent,
    reduction,
    resampling,
    roi,
    scatter,
    sequence,
    signal,
    sorting,
    sparse,
    spatial,
    state,
    strings,
    suppression,
)

# The function forms of irscatter's own opset irscatter1 and of PagedAttentionExtension: numpy arrays in, numpy arrays out.
from irscatter.ops.internal.paged_attention_extension import paged_attention
from irscatter.ops.irscatter1.bnns_scatter import bnns_scatter
from irscatter.ops.irscatter1.hlo_scatter import hlo_scatter
from irscatter.ops.irscatter1.paddle_scatter import paddle_scatter
from irscatter.ops.irscatter1.paged_scatter_update import paged_scatter_update

__all__ = ["bnns_scatter", "hlo_scatter", "paddle_scatter", "paged_attention", "paged_scatter_update"]
