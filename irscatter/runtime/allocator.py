"""How the C allocator behind numpy's arrays keeps the memory a run frees.

A run makes and drops an array per layer, most of them a few hundred kilobytes to a few tens of
megabytes. glibc's malloc gives such blocks back to the kernel when they are freed: a block
above its mmap threshold is unmapped, and free memory at the top of the heap beyond its trim
threshold is returned. The next layer's array then takes fresh pages, and the kernel clears each
page on its first touch: a bias Add over [1, 197, 1152] in a ViT spent most of its time in those
page faults, not in the addition. OpenVINO's plugin avoids the same cost with its own memory
pool; irscatter asks glibc to keep freed memory for reuse instead (`keep_freed_memory`, called
when a model is compiled): blocks up to MMAP_LIMIT come from the heap, and the heap is not trimmed.

What that changes: the process keeps the memory of its largest run mapped after the run (its
peak is unchanged), and a block above MMAP_LIMIT is still mapped and unmapped on its own, so a
huge temporary is given back at once. `IRSCATTER_ALLOCATOR=system` leaves malloc's settings as
they are (for a process that shares its memory with other work); other C libraries have no
such settings, and are left alone.
"""

from __future__ import annotations

import ctypes
import os
import platform

# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

# Blocks larger than this are still mapped on their own and unmapped when freed: 1 GiB, so
# that a huge temporary (a model's largest logits, an LLM's decompressed table) does not stay
# with the process.
MMAP_LIMIT = 1 << 30
# glibc takes the threshold as an int: the largest it accepts leaves the heap untrimmed.
_NO_TRIM = (1 << 31) - 1

_done = False


def keep_freed_memory() -> bool:
    """Sets malloc to keep freed blocks for reuse, once per process, unless the environment says
    `IRSCATTER_ALLOCATOR=system`; True when the settings are in effect."""
    global _done
    if _done:
        return True
    if os.environ.get("IRSCATTER_ALLOCATOR", "").lower() == "system" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    _done = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_LIMIT)) and bool(mallopt(_M_TRIM_THRESHOLD, _NO_TRIM))
    return _done
