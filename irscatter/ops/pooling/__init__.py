"""Pooling: max and average windows, and the adaptive forms.
"""
