"""What the depthwise plan (`depthwise_compiled.py`) and its compiled loops
(`depthwise_kernels.py`, which imports numba) share, kept apart from both so that neither
imports the other at its top: the loops' run width, and the loops as `machine_code` keeps them."""

from __future__ import annotations

import ctypes

from irscatter.ops.common.machine_code import KeptLoop

KERNELS = "irscatter.ops.convolution.depthwise_kernels"
# The loop computes the sums of a block in whole runs of this many.
LANES = 16
# Both loops in f32 as C functions (`depthwise_kernels._as_c_loops`), kept as machine code by a
# process that uses them through numba, for the calls of later processes before numba is set up
# (`machine_code`). Their key: the sources the loops are made of. Their arguments: the data and
# its [channels, rows, columns], the filters and their four dimensions (the loop over blocks of
# channels reads all four), the output and its rows and columns, the geometry, the taps'
# offsets, the channels' range, and three buffers with their sizes (the channel loop uses two).
_SOURCES = (KERNELS, "irscatter.ops.common.compiled_hints", "irscatter.ops.convolution.depthwise_kept")
_C_SIGNATURE = ((ctypes.c_void_p,) + (ctypes.c_int64,) * 3 + (ctypes.c_void_p,) + (ctypes.c_int64,) * 4
                + (ctypes.c_void_p,) + (ctypes.c_int64,) * 2 + (ctypes.c_void_p,) * 2 + (ctypes.c_int64,) * 2
                + (ctypes.c_void_p, ctypes.c_int64) * 3)
KEPT_LOOP = KeptLoop("depthwise-f32", _SOURCES, _C_SIGNATURE, ctypes.c_int64)
KEPT_LANES = KeptLoop("depthwise-lanes-f32", _SOURCES, _C_SIGNATURE, ctypes.c_int64)
