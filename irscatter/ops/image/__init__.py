"""Colour-space conversions of camera frames (NV12, I420, RGB, BGR). The YUV <-> RGB arithmetic,
the frame layouts and the shape rules they share are in `core.py`.
"""
