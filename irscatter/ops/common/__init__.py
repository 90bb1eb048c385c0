"""Helpers shared across op families (axes, indices, element types, numeric conversion, and
`strict`, where kernels report behaviour the spec leaves undefined).
Nothing here registers an op.
"""
