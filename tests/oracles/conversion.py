"""Oracles of the conversion ops: ConvertLike-1 and ConvertPromoteTypes-14, one element per step.

Each element converts by Convert-1's rules as the spec states them for one value: floats to
integers truncate toward zero and saturate (NaN to 0), integers wrap modulo 2^bits, anything
to boolean is "non-zero", floats narrow by nearest-even (through numpy's own scalar cast).
"""

import math

import numpy as np

from irscatter.ir.element_types import ElementType


def convert_value(v, dst: ElementType):
    if dst is ElementType.boolean:
        return bool(v != 0)
    if dst.is_integral:
        bits = dst.bitwidth
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dst.is_signed else (0, (1 << bits) - 1)
        if isinstance(v, (float, np.floating)) or (hasattr(v, "dtype") and v.dtype.kind == "f"):
            f = float(v)
            if math.isnan(f):
                return 0
            t = math.trunc(f) if math.isfinite(f) else (hi if f > 0 else lo)
            return max(lo, min(hi, t))
        w = int(v) % (1 << bits)
        return w - (1 << bits) if dst.is_signed and w > hi else w
    return float(v)


def convert(data, dst: ElementType):
    flat = [convert_value(v, dst) for v in data.reshape(-1)]
    if dst.is_float:
        wide = np.array(flat, np.float64).reshape(data.shape)
        # bf16 rounds through f32 (nearest-even at each step), as Convert-1's rule says
        return wide.astype(np.float32).astype(dst.dtype) if dst is ElementType.bf16 else wide.astype(dst.dtype)
    return np.array(flat, dtype=object).astype(dst.dtype).reshape(data.shape)


def convert_like(data, like):
    return convert(data, ElementType.from_dtype(like.dtype))


def convert_promote_types(common: ElementType):
    def oracle(a, b):
        return convert(a, common), convert(b, common)
    return oracle
