"""Reductions over axes given by an input, and running sums along one axis.
"""
