"""Discrete Fourier transforms (DFT, IDFT, RDFT, IRDFT) and short-time transforms (STFT, ISTFT)
over np.fft. The complex layout, the axes and signal_size rules, and the frame and window inputs
they share are in `core.py`.
"""
