"""Sorting and searching: top-k, unique values, bucketing, sorted search, non-zero positions,
counts of values (Bincount).
"""
