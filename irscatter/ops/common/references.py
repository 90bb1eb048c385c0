"""Whether an array in a list is held by that list alone: the one place irscatter reads
`sys.getrefcount`. The rule built on it, who may write into which array, is `buffers.py`'s.

The count is exact for what matters here: every other holder of the array adds one to it (a
name, a dict, another list slot, a caller's feeds, a Const's cache), and so does every view of
it, which keeps its base alive. An array whose count is the list's alone can be overwritten
without anyone seeing the change. It is read before any local name holds the array, which
would add one of its own.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def _count_in_a_list_alone() -> int:
    """What `sys.getrefcount(items[i])` reads for an array nothing but the list `items` holds
    (the interpreter's slots, the recycler's runs): one for the list, one for the argument."""
    items = [np.empty(1)]
    return sys.getrefcount(items[0])


SOLE_REFERENCE = _count_in_a_list_alone()


def unshared(items: list[Any], index: int) -> bool:
    """Whether `items[index]` is an array that `items` alone holds and that views no other
    array, so that writing into it changes nothing anyone else can see."""
    if sys.getrefcount(items[index]) != SOLE_REFERENCE:  # read before any local name holds it
        return False
    array = items[index]
    return isinstance(array, np.ndarray) and array.base is None
