"""Discrete Fourier transforms and short-time transforms over np.fft.
"""
