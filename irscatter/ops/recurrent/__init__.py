"""Recurrent cells and sequences: RNN, GRU and LSTM.
"""

from irscatter.ops.recurrent import (  # noqa: F401  (importing a module registers its ops)
    gru_cell,
    gru_sequence,
    lstm_cell,
    lstm_sequence,
    rnn_cell,
    rnn_sequence,
)
