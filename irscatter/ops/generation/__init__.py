"""Ops that make tensors from scalars and shapes: sequences (Range), identity-like matrices
(Eye) and pseudo-random values (RandomUniform, Multinomial, RandomPoisson; their generators are in
core.py).
"""
