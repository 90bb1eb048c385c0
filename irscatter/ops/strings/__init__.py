"""Packing and unpacking string tensors.
"""
