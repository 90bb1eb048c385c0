"""Helpers shared across op families (axes, indices, element types, numeric conversion).
Nothing here registers an op.
"""
