"""Ops that move or reinterpret data without arithmetic: shapes, views, slices and joins.

Their inference computes values whenever the inputs are known, so the ShapeOf chains of a
static model fold into constants and the shape-determining inputs of later ops become known.
"""
