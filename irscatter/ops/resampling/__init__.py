"""Resampling: interpolation and grid sampling of images and volumes.
"""
