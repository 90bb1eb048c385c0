"""Colour-space conversions of camera frames (NV12, I420, RGB, BGR).
"""
