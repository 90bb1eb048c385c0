"""Dimensions and partial shapes, with the IR's text syntax.

A `Dimension` is an interval [min, max] (max None = unbounded); a static dimension has
min == max. A `PartialShape` is a tuple of dimensions, or `None` dims for a dynamic rank.

Text syntax (Parameter `shape`, PartialShape attributes): `1,3,224,224` or `[1,3,224,224]`,
`?` or `-1` for a fully dynamic dimension, `1..10`, `..10`, `2..` for intervals, `...` for a
dynamic rank, and the empty string for a scalar. Both classes serialize to that text in JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, model_serializer, model_validator

from irscatter.errors import elide


class Dimension(BaseModel):
    model_config = ConfigDict(frozen=True)

    min: int = 0
    max: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            d = parse_dimension(value)
            return {"min": d.min, "max": d.max}
        if isinstance(value, int) and not isinstance(value, bool):
            return {"min": 0, "max": None} if value == -1 else {"min": value, "max": value}
        return value

    @model_serializer
    def _to_text(self) -> str:
        return str(self)

    @classmethod
    def static(cls, n: int) -> Dimension:
        return _static_dim(n)

    @classmethod
    def dynamic(cls) -> Dimension:
        return _DYNAMIC

    @property
    def is_static(self) -> bool:
        return self.max is not None and self.min == self.max

    @property
    def is_dynamic(self) -> bool:
        return not self.is_static

    def contains(self, n: int) -> bool:
        return self.min <= n and (self.max is None or n <= self.max)

    def compatible(self, other: Dimension) -> bool:
        """Two dimensions are compatible when their intervals intersect."""
        lo = max(self.min, other.min)
        hi = other.max if self.max is None else self.max if other.max is None else min(self.max, other.max)
        return hi is None or lo <= hi

    def __int__(self) -> int:
        if not self.is_static:
            raise ValueError(f"dimension {self} is not static")
        return self.min

    def __index__(self) -> int:
        """A static dimension is an integer wherever numpy or Python wants one (`np.zeros(shape)`)."""
        if not self.is_static:
            raise TypeError(f"dimension {self} is not static: it has no one size")
        return self.min

    def __str__(self) -> str:
        if self.is_static:
            return str(self.min)
        if self.max is None:
            return "?" if self.min == 0 else f"{self.min}.."
        return f"..{self.max}" if self.min == 0 else f"{self.min}..{self.max}"

    def __repr__(self) -> str:
        return f"Dimension({self})"


def is_plain_number(text: str) -> bool:
    """Whether `int()` or `float()` reads `text` as C's parsers (and OpenVINO) would: Python's
    also take digits of other scripts ("٣" is 3) and underscores between digits."""
    return text.isascii() and "_" not in text


def is_decimal(text: str) -> bool:
    """A non-empty run of ASCII digits: what `int()` is sure to read (`str.isdigit` also
    accepts characters such as superscript two, which `int()` refuses)."""
    return text.isascii() and text.isdigit()


_DYNAMIC = Dimension.model_construct(min=0, max=None)
_SHAPE_CACHE: dict[tuple[int, ...], PartialShape] = {}  # shapes of integer dims, shared (they are frozen)
_STATIC_CACHE: dict[int, Dimension] = {}


def _static_dim(n: int) -> Dimension:
    d = _STATIC_CACHE.get(n)
    if d is None:
        d = Dimension.model_construct(min=n, max=n)
        if n < 4096:
            _STATIC_CACHE[n] = d
    return d


# 2**64 has 20 digits: a longer number is no size or offset any tensor or file can have (and
# Python refuses to read integers of over 4300 digits at all).
MAX_DIGITS = 20
MAX_RANK = 64  # numpy's limit on the number of dimensions


def read_count(text: str, what: str) -> int:
    """A non-negative decimal integer (already checked by `is_decimal`) of at most MAX_DIGITS."""
    if len(text) > MAX_DIGITS:
        raise ValueError(f"{what} {elide(text, 24)} has {len(text)} digits, more than any size could need")
    return int(text)


def _check_rank(fields: list[str], text: str) -> None:
    if len(fields) > MAX_RANK:
        raise ValueError(f'shape "{elide(text)}" has rank {len(fields)}, more than the {MAX_RANK} dimensions '
                         f"an array can have")


def parse_dimension(text: str) -> Dimension:
    t = text.strip()
    if t in ("?", "-1"):
        return _DYNAMIC
    if ".." in t:
        lo_text, hi_text = t.split("..", 1)
        lo = _parse_bound(lo_text, t, "min") if lo_text.strip() else 0
        hi = _parse_bound(hi_text, t, "max") if hi_text.strip() else None
        if hi is not None and hi < lo:
            raise ValueError(f'dimension "{text}" has a max bound below its min bound')
        return Dimension.model_construct(min=lo, max=hi)
    return _static_dim(_parse_bound(t, t, "value"))


def _parse_bound(text: str, whole: str, what: str) -> int:
    t = text.strip()
    if not is_decimal(t):
        raise ValueError(f'cannot parse dimension "{elide(whole)}": {what} "{elide(t)}" is not a non-negative integer')
    return read_count(t, f"dimension {what}")


class PartialShape(BaseModel):
    """A shape whose rank and dimensions may be dynamic. `dims is None` means dynamic rank."""

    model_config = ConfigDict(frozen=True)

    dims: tuple[Dimension, ...] | None = ()

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"dims": parse_partial_shape(value).dims}
        if isinstance(value, (list, tuple)):
            return {"dims": tuple(value)}
        return value

    @model_serializer
    def _to_text(self) -> str:
        return self.to_text()

    # constructors ----------------------------------------------------------------------------

    @classmethod
    def of(cls, dims: Iterable[int | Dimension] | None) -> PartialShape:
        """From ints (-1 = dynamic) and Dimensions; None gives a dynamic rank."""
        if dims is None:
            return _DYNAMIC_RANK
        if isinstance(dims, (list, tuple)) and len(dims) <= 8:
            key = tuple(dims)
            cached = _SHAPE_CACHE.get(key)
            if cached is not None:
                return cached
            if all(type(d) is int for d in key):  # frozen, so one instance can serve every port
                shape = cls._of(key)
                if len(_SHAPE_CACHE) < 65536:
                    _SHAPE_CACHE[key] = shape
                return shape
        return cls._of(dims)

    @classmethod
    def _of(cls, dims: Iterable[int | Dimension]) -> PartialShape:
        out = []
        for d in dims:
            if isinstance(d, Dimension):
                out.append(d)
            elif d == -1:
                out.append(_DYNAMIC)
            elif d < -1:
                raise ValueError(f"dimension {d} is below -1")
            else:
                out.append(_static_dim(int(d)))
        return cls.model_construct(dims=tuple(out))

    @classmethod
    def dynamic_rank(cls) -> PartialShape:
        return _DYNAMIC_RANK

    # queries -------------------------------------------------------------------------------

    @property
    def rank_is_static(self) -> bool:
        return self.dims is not None

    @property
    def rank(self) -> int:
        if self.dims is None:
            raise ValueError("shape has a dynamic rank")
        return len(self.dims)

    @property
    def ranked_dims(self) -> tuple[Dimension, ...]:
        """The dimensions of a shape whose rank its reader has already found static (a type
        checker cannot follow `rank_is_static` to `dims`); ValueError for a dynamic rank."""
        if self.dims is None:
            raise ValueError("shape has a dynamic rank")
        return self.dims

    @property
    def is_static(self) -> bool:
        return self.dims is not None and all(d.is_static for d in self.dims)

    def to_tuple(self) -> tuple[int, ...]:
        """The static shape as ints; raises ValueError when any part is dynamic."""
        if not self.is_static:
            raise ValueError(f"shape {self} is not static")
        return tuple(d.min for d in self.ranked_dims)

    def compatible(self, other: PartialShape) -> bool:
        if self.dims is None or other.dims is None:
            return True
        return len(self.dims) == len(other.dims) and all(
            a.compatible(b) for a, b in zip(self.dims, other.dims)
        )

    def relaxes(self, other: PartialShape) -> bool:
        """Whether every concrete shape `other` allows fits this one too."""
        if self.dims is None:
            return True
        if other.dims is None or len(self.dims) != len(other.dims):
            return False
        return all(a.min <= b.min and (a.max is None or (b.max is not None and b.max <= a.max))
                   for a, b in zip(self.dims, other.dims))

    def accepts(self, shape: Sequence[int]) -> bool:
        """Whether a concrete shape fits this partial shape."""
        if self.dims is None:
            return True
        return len(shape) == len(self.dims) and all(d.contains(n) for d, n in zip(self.dims, shape))

    def __len__(self) -> int:
        return self.rank

    def __getitem__(self, i: int) -> Dimension:
        if self.dims is None:
            raise ValueError("shape has a dynamic rank")
        return self.dims[i]

    def __iter__(self):  # type: ignore[override]
        if self.dims is None:
            raise ValueError("shape has a dynamic rank")
        return iter(self.dims)

    def to_text(self) -> str:
        if self.dims is None:
            return "..."
        return ",".join(str(d) for d in self.dims)

    def __str__(self) -> str:
        return "[...]" if self.dims is None else "[" + ", ".join(str(d) for d in self.dims) + "]"

    def __repr__(self) -> str:
        return f"PartialShape({self})"


_DYNAMIC_RANK = PartialShape.model_construct(dims=None)


def parse_partial_shape(text: str) -> PartialShape:
    """Parse the IR's PartialShape text; raises ValueError with the offending field."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1].strip()
    if t == "...":
        return _DYNAMIC_RANK
    if t == "":
        return PartialShape.model_construct(dims=())
    fields = t.split(",")
    _check_rank(fields, text)
    if any(f.strip() == "" for f in fields):
        raise ValueError(f'shape "{elide(text)}" has an empty dimension')
    return PartialShape.model_construct(dims=tuple(parse_dimension(f) for f in fields))


def parse_static_shape(text: str) -> tuple[int, ...]:
    """A Const `shape`: comma-separated non-negative integers, spaces allowed, "" = scalar."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1].strip()
    if t == "":
        return ()
    fields = t.split(",")
    _check_rank(fields, text)
    out = []
    for f in fields:
        f = f.strip()
        if not is_decimal(f):
            raise ValueError(f'shape "{elide(text)}" has "{elide(f)}", which is not a non-negative integer')
        out.append(read_count(f, "dimension"))
    return tuple(out)
