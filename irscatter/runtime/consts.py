"""The Const values a compiled model's runs read, decoded once (`ConstValues`).

A Const is read when a run first needs it, so an unused model's weights are never touched; after
that, a lookup per run is waste, so the decoded values are kept, those a plain run reads and, when
a watched run asks, all of them. The requests of one compiled model share them.

A misaligned weight that only products and lookups read is read where it lies on a model's first
run and copied on its second (`ConstValues`). The large Consts a run copies are decoded first, on
the thread policy's parts, each part a run of them of about a share of their bytes: a
misaligned weight is read into memory of its own (`ir.loader.ConstData`), bound by page faults
and copies, which the cores make side by side (a decoder's weights, on its second call).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from irscatter.errors import IRError
from irscatter.ir.graph import Layer
from irscatter.ops.common import direct_blas, threads
from irscatter.runtime.plan import Plan

# Consts of at least this many bytes are decoded side by side on a first run (`_decode_large`).
LARGE_CONST_BYTES = 1 << 20


class ConstValues:
    """(slot, value) of the Consts of `plan`'s runs, decoded on the first run that needs them;
    errors name the model's `source`.

    A first run reads a misaligned weight that only products and lookups read where it lies
    (`_where_it_lies`); the second run copies it to aligned memory, which later runs read. A
    product streams a misaligned weight through loads that straddle cache lines, some percent
    slower a run, while the copy costs a page fault a page once: so a model run once (a
    comparison, a reduction's candidate) never copies its weights, and one run many times
    copies them as it always did, one run later."""

    def __init__(self, plan: Plan, source: str) -> None:
        self.plan, self.source = plan, source
        self._found: list[list[tuple[int, np.ndarray]] | None] = [None, None]
        self._lying = [False, False]  # whether each list holds weights where they lie
        self._runs = 0

    def start_run(self) -> None:
        """Count a run of the model: the values a run reads after its first are aligned."""
        self._runs += 1

    def arrays(self, every: bool = False) -> list[tuple[int, np.ndarray]]:
        """Those a plain run reads (`every`: all of them): the codes of a compressed weight are
        left to its lookup."""
        found = self._found[every]
        first_run = self._runs <= 1
        if found is None or (self._lying[every] and not first_run):
            slots = self.plan.const_slots if every else self.plan.run_const_slots
            lying = {slot: view for slot, layer in slots if first_run and slot in self.plan.misaligned_ok
                     and (view := _where_it_lies(layer, self.source)) is not None}
            _decode_large([layer for slot, layer in slots if slot not in lying], self.source)
            found = self._found[every] = [(slot, lying[slot] if slot in lying else const_value(layer, self.source))
                                          for slot, layer in slots]
            self._lying[every] = bool(lying)
        return found


def _where_it_lies(layer: Layer, source: str) -> np.ndarray | None:
    """The value of a Const that only products and lookups read, as a view of the weights
    wherever they lie, when it is misaligned and BLAS takes it there (`direct_blas.py`): a
    copy would cost its pages' faults on the first run (a decoder's f32 weights are most of
    its first prompt). None where the aligned value serves."""
    view = const_value(layer, source, aligned=False)
    return view if not view.flags.aligned and direct_blas.available(view.dtype) else None


def const_value(layer: Layer, source: str, aligned: bool = True) -> np.ndarray:
    """The decoded value of a Const layer, its error naming the model's file and the layer;
    not `aligned`: a view of the weights wherever they lie (`ConstData.value`)."""
    try:
        return layer.const_value if aligned else layer.const_data.value(aligned=False)
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
