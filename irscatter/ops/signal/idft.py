"""IDFT-7: the inverse discrete Fourier transform of a complex tensor over the given axes,
Y[m] = 1/prod(S) sum_j X[j] exp(+2 pi i sum_q m_q j_q / S_q), normalised by the product of the
transformed lengths (after signal_size). The complex layout, axes and signal_size rules are in
`core.py`.
"""

from __future__ import annotations

from irscatter.ops.registry import register
from irscatter.ops.signal.core import ComplexTransform


@register("IDFT", 7)
class IDFT(ComplexTransform):
    inverse = True
