"""Recurrent cells and sequences: RNN, GRU and LSTM.
"""
