"""Sequence decoding: beam-search back-tracking.
"""
