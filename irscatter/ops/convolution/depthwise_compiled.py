"""The depthwise plan of numba's compiled loop (`depthwise_kernels.py`), which `plans.plan_forward`
chooses when numba is to be used (`accel.enabled()`): one input channel per group, one or two
spatial axes. Its sums are the taps plans' (and the per-offset kernel's) to the bit."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from irscatter.ops.common import accel, machine_code, threads
from irscatter.ops.convolution.depthwise_kept import KEPT_LANES, KEPT_LOOP, LANES
from irscatter.ops.convolution.plan_base import Plan, Taps

# Outputs (a phase's row width each) the compiled plan sums a block of rows into: 8 KB of f32.
COMPILED_BLOCK = 2048
# Multiply-adds from which the compiled plan splits over the threads: its loop does a
# multiply-add in a fraction of a nanosecond, so a layer this size takes several times the
# tens of microseconds a helper thread takes to wake.
COMPILED_SPLIT = 1 << 18
# Output columns up to which a layer takes the loop over blocks of channels side by side
# (`depthwise_kernels.depthwise_lanes`): on 7x7 maps it took half the time of the loop a
# channel, on 14x14 about as long, on wider maps longer (its copies in and out of the blocks
# cost more than the channel loop's short rows).
LANES_WIDTH = 8
# Channels a block of that loop holds side by side: a position's channels are then one 512-bit
# vector of f32 (two of f64).
BLOCK_CHANNELS = 16
# Multiply-adds of a layer from which its first call loads the kept loops (some tens of
# milliseconds once a process, where numpy's taps plan takes a few for a layer this size).
KEPT_WORK = 1 << 22


class DepthwiseCompiled(Taps["_Compiled"]):
    """The taps of a 1-D or 2-D layer in one compiled loop (`depthwise_kernels.depthwise`, with
    numba): per channel, its data copied once by phase of the strides into a buffer that stays
    in the cache, then a block of output rows at a time, the taps added in their order to sums
    from +0.0 held in the cache, and written out. The taps plans' arithmetic, and so the
    per-offset kernel's bits, in one pass over the data where the taps plans take two passes
    over large arrays a tap. A layer of LANES_WIDTH output columns or fewer takes the loop over
    blocks of BLOCK_CHANNELS channels side by side instead (`depthwise_kernels.depthwise_lanes`),
    with the same bits. When numba is not to be used (`accel.enabled()`, asked at each
    call), the plan numpy would take for the shape (`fallback`) computes instead."""

    name = "depthwise (compiled)"
    split_from = COMPILED_SPLIT

    def __init__(self, *args, fallback: Plan, unloaded: Plan | None = None) -> None:
        super().__init__(*args)
        self.fallback, self.unloaded = fallback, unloaded
        pad = (1,) * (2 - len(self.kernel))  # a 1-D layer is one row
        kernel, strides, dilations = pad + self.kernel, pad + self.strides, pad + self.dilations
        self.in_2d = (self.n * self.g, *(pad + self.in_dims))
        self.out_2d = (self.n * self.g, self.d, *(pad + self.out_dims))
        reach = [(k - 1) * dl // s for k, dl, s in zip(kernel, dilations, strides)]
        hq, wq = (o + r for o, r in zip(self.out_2d[2:], reach))  # a phase's rows and columns
        block = max(1, min(self.out_2d[2], COMPILED_BLOCK // max(wq, 1)))
        self.geometry = np.array([*strides, *((0,) * len(pad) + self.begin), hq, wq, block], np.int64)
        phases = [[(t * dl % s, t * dl // s) for t in range(k)] for k, dl, s in zip(kernel, dilations, strides)]
        self.offsets = np.array([(ay * strides[1] + ax) * hq * wq + qy * wq + qx
                                 for (ay, qy), (ax, qx) in itertools.product(*phases)], np.int64)
        self.by_lanes = self.out_2d[3] <= LANES_WIDTH
        self.lane_blocks = -(-self.n * self.g // BLOCK_CHANNELS)  # (blocks of that loop)

    def prepare(self, w: np.ndarray) -> _Compiled:
        taps = np.ascontiguousarray(w.reshape(self.g, self.d, self.taps))
        return _Compiled(taps, self._lanes(taps) if self.by_lanes else None, w, self.fallback, self.unloaded)

    def _lanes(self, taps: np.ndarray) -> np.ndarray:
        """The filters as `depthwise_lanes` reads them: [blocks, D, taps, BLOCK_CHANNELS], channel
        (over the batch's samples and the groups) BLOCK_CHANNELS * b + l at [b, :, :, l]."""
        channels = self.n * self.g
        spread = np.zeros((self.lane_blocks * BLOCK_CHANNELS, self.d, self.taps), taps.dtype)
        spread[:channels] = taps[np.arange(channels) % self.g]
        return np.ascontiguousarray(spread.reshape(self.lane_blocks, BLOCK_CHANNELS, self.d, self.taps)
                                    .transpose(0, 2, 3, 1))

    def _blocks(self, count: int) -> Sequence[tuple[int, ...]]:
        channels = self.n * self.g
        if not self.by_lanes:
            return threads.spans(channels, count)
        return [(lo * BLOCK_CHANNELS, min(hi * BLOCK_CHANNELS, channels))
                for lo, hi in threads.spans(self.lane_blocks, count)]

    def __call__(self, x: np.ndarray, prepared: _Compiled) -> np.ndarray:
        if not accel.enabled():
            return self.fallback(x, prepared.for_fallback())
        warm = accel.warm()  # (numba set up by a compiled loop: this module's loops then load in milliseconds)
        first = self.unloaded is not None and not prepared.called and not warm
        if x.dtype == np.float32 and not warm:  # (kept code; once numba is up, its dispatch costs less a call)
            spec = KEPT_LANES if prepared.lanes is not None else KEPT_LOOP
            if not first or self.work >= KEPT_WORK or machine_code.loaded(spec):
                kept = machine_code.load(spec)
                if kept is not None:  # (the loop's code without numba's import: see `machine_code`)
                    return self._compute(x, prepared, partial(self._call_kept, kept, prepared))
        if first and self.unloaded is not None:
            # A layer's first call before numba is set up: numpy's taps plan, the same bits, so
            # that a model run once does not wait for numba (its second call loads it).
            prepared.called = True
            return self.unloaded(x, prepared.for_unloaded())
        from irscatter.ops.convolution import depthwise_kernels  # (imports numba: only when used)

        depthwise_kernels.keep_loops()
        return self._compute(x, prepared, partial(self._call_numba, depthwise_kernels, prepared))

    def _compute(self, x: np.ndarray, prepared: _Compiled, loop: Callable[..., object]) -> np.ndarray:
        """`loop(source, out, c0, c1)` over the parts' channels."""
        source = np.ascontiguousarray(x).reshape(self.in_2d)
        out = np.empty(self.out_2d, x.dtype)
        self._run(lambda c0, c1: loop(source, out, c0, c1))
        return out.reshape((self.n, self.g, self.d) + self.out_dims)

    def _buffers(self, prepared: _Compiled, dtype: np.dtype) -> tuple[np.ndarray, ...]:
        """A part's buffers: the channel's copy (zeros) and its block's sums, or for the loop over
        blocks of channels the block's copy (zeros), a row's filters and the rows' sums."""
        sy, sx, _, _, hq, wq, block = (int(v) for v in self.geometry)
        if prepared.lanes is None:  # (a row and a vector more: the last block's cut columns read past)
            return np.zeros(sy * sx * hq * wq + wq + LANES, dtype), np.empty(block * wq + LANES, dtype)
        run = self.out_2d[3] * BLOCK_CHANNELS
        return (np.zeros(sy * sx * hq * wq * BLOCK_CHANNELS, dtype), np.empty(self.taps * run, dtype),
                np.empty(self.out_2d[2] * run, dtype))

    def _call_numba(self, kernels, prepared: _Compiled, source: np.ndarray, out: np.ndarray, c0: int, c1: int) -> None:
        loop, filters = ((kernels.depthwise_lanes, prepared.lanes) if prepared.lanes is not None
                         else (kernels.depthwise, prepared.taps))
        loop(source, filters, out, self.geometry, self.offsets, source.dtype.type(0), c0, c1,
             *self._buffers(prepared, source.dtype))

    def _call_kept(self, kept: Callable[..., int], prepared: _Compiled, source: np.ndarray, out: np.ndarray,
                   c0: int, c1: int) -> None:
        filters = prepared.lanes if prepared.lanes is not None else prepared.taps
        buffers = self._buffers(prepared, source.dtype)
        pairs = [value for buffer in buffers for value in (buffer.ctypes.data, buffer.size)]
        pairs += [0, 0] * (3 - len(buffers))
        lanes = filters.shape[-1] if filters.ndim == 4 else 1
        kept(source.ctypes.data, *source.shape, filters.ctypes.data, filters.shape[0], self.d, self.taps, lanes,
             out.ctypes.data, *out.shape[2:], self.geometry.ctypes.data, self.offsets.ctypes.data, c0, c1, *pairs)


class _Compiled:
    """The filters as the compiled loop reads them [G, C_OUT, taps] (and as the loop over blocks
    of channels reads them, for a plan that takes it), and what the fallback plan derives from
    them, made the first time a call needs it."""

    def __init__(self, taps: np.ndarray, lanes: np.ndarray | None, w: np.ndarray, fallback: Plan,
                 unloaded: Plan | None) -> None:
        self.taps, self.lanes, self._w, self._fallback, self._unloaded = taps, lanes, w, fallback, unloaded
        self._prepared: dict[int, object] = {}
        self.called = False  # whether a call has been made before numba's loop was loaded

    def for_fallback(self) -> object:
        return self._for(self._fallback)

    def for_unloaded(self) -> object:
        """Made for the one call it serves, not kept: a layer's later calls take the loop (the
        channels-last plan's filters, laid out once per output column, are megabytes a layer)."""
        assert self._unloaded is not None
        return self._unloaded.prepare(self._w)

    def _for(self, plan: Plan) -> object:
        key = id(plan)
        if key not in self._prepared:
            self._prepared[key] = plan.prepare(self._w)
        return self._prepared[key]
