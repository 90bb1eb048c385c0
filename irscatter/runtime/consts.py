"""The Const values a compiled model's runs read, decoded once (`ConstValues`).

A Const is read when a run first needs it, so an unused model's weights are never touched; after
that, a lookup per run is waste, so the decoded values are kept, those a plain run reads and, when
a watched run asks, all of them. The requests of one compiled model share them.

A first run decodes its large Consts first, on the thread policy's parts, each part a run of
them of about a share of their bytes: a misaligned weight is read into memory of its own (`ir.loader.ConstData`), bound by
page faults and copies, which the cores make side by side (the weights of a decoder's first prompt).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from irscatter.errors import IRError
from irscatter.ir.graph import Layer
from irscatter.ops.common import threads
from irscatter.runtime.plan import Plan

# Consts of at least this many bytes are decoded side by side on a first run (`_decode_large`).
LARGE_CONST_BYTES = 1 << 20


class ConstValues:
    """(slot, value) of the Consts of `plan`'s runs, decoded on the first run that needs them;
    errors name the model's `source`."""

    def __init__(self, plan: Plan, source: str) -> None:
        self.plan, self.source = plan, source
        self._found: list[list[tuple[int, np.ndarray]] | None] = [None, None]

    def arrays(self, every: bool = False) -> list[tuple[int, np.ndarray]]:
        """Those a plain run reads (`every`: all of them): the codes of a compressed weight are
        left to its lookup."""
        found = self._found[every]
        if found is None:
            slots = self.plan.const_slots if every else self.plan.run_const_slots
            _decode_large([layer for _, layer in slots], self.source)
            found = self._found[every] = [(slot, const_value(layer, self.source)) for slot, layer in slots]
        return found


def const_value(layer: Layer, source: str) -> np.ndarray:
    """The decoded value of a Const layer, its error naming the model's file and the layer."""
    try:
        return layer.const_value
    except IRError as e:
        raise e.add_context(file=source, layer=layer.ref, line=layer.line) from None


def _decode_large(layers: list[Layer], source: str) -> None:
    """Decode the large Consts among `layers`, in shares of near-equal bytes on the thread
    policy's parts."""
    large = [(data.size, layer) for layer in layers
             if (data := layer.const_data) is not None and data.size >= LARGE_CONST_BYTES]
    count = threads.parts(sum(size for size, _ in large))
    if count < 2 or len(large) < 2:
        return
    shares = threads.weighed_spans([size for size, _ in large], count)
    threads.run([partial(_decode_each, [layer for _, layer in large[lo:hi]], source) for lo, hi in shares])


def _decode_each(layers: list[Layer], source: str) -> None:
    for layer in layers:
        const_value(layer, source)
