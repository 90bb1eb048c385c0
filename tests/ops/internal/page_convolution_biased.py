"""ConvolutionBiased (and the internal Convolution, whose page is the same) as the page writes
its output, out = sum over the window of w_i x_i + b: the sum is the Convolution-1 oracle's
(tests/oracles/convolution.py, one output element per Python step, the page's window rules),
then each element gets its bias in Python numbers, once: floats stay f64 for the caller to
round, integers wrap modulo 2^bits as the sum does. The bias is read in the page's layout (the
output's rank, broadcast) or, 1-D, as one value per output channel (OpenVINO's FuseBias form)."""

from __future__ import annotations

import itertools

from oracles.convolution import _finish, _scalar, convolution


def convolution_biased(data, filters, bias=None, **attrs):
    out = convolution(data, filters, **attrs)
    if bias is None:
        return out
    for index in itertools.product(*(range(d) for d in out.shape)):
        b = bias[index[1]] if bias.ndim == 1 else bias[tuple(i if n > 1 else 0 for i, n in zip(index, bias.shape))]
        out[index] = _finish(_scalar(out[index]) + _scalar(b), data.dtype)
    return out
