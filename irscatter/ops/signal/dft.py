"""DFT-7: the discrete Fourier transform of a complex tensor over the given axes,
Y[m] = sum_j X[j] exp(-2 pi i sum_q m_q j_q / S_q), unnormalised. The complex layout, axes and
signal_size rules are in `core.py`.
"""

from __future__ import annotations

from irscatter.ops.registry import register
from irscatter.ops.signal.core import ComplexTransform


@register("DFT", 7)
class DFT(ComplexTransform):
    inverse = False
