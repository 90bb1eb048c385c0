"""The op library. Each module below registers one family of ops; this list is the registry's
table of contents, so that what irscatter supports can be read in one place."""

from irscatter.ops import arithmetic, conversion, gather, infrastructure, scatter, slicing  # noqa: F401
