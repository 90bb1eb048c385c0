"""Ops that move blocks of data between the spatial, depth and batch dimensions, and patch extraction.
"""
