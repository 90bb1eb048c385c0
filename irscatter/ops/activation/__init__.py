"""Activation functions: the element-wise ones as rows of a table (elementwise.py), the rest one
module per op type."""
