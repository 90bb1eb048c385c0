"""SSM as its page (internal/ssm.rst) writes it: the page's PyTorch function
`torch_ssm_recurrence`, line by line in numpy, in f64. Discretization is done step by step.
`expanded` is the opening the SSM and SelectiveSSM pages share."""

import numpy as np


def expanded(A, dt, B, x, C, recurrent_state):
    """The inputs in f64, B and C expanded from groups to heads as both pages do."""
    A, dt, B, x, C, recurrent_state = (np.asarray(v, np.float64) for v in (A, dt, B, x, C, recurrent_state))
    num_heads = x.shape[2]
    num_groups = B.shape[2]
    heads_per_group = num_heads // num_groups

    B = np.repeat(B, heads_per_group, axis=2)  # repeat_interleave along dim 2
    C = np.repeat(C, heads_per_group, axis=2)
    return A, dt, B, x, C, recurrent_state


def torch_ssm_recurrence(A, dt, B, x, C, recurrent_state):
    A, dt, B, x, C, recurrent_state = expanded(A, dt, B, x, C, recurrent_state)
    batch_size, seq_len, num_heads, head_dim = x.shape

    output = np.zeros((batch_size, seq_len, num_heads, head_dim))
    output_recurrent_state = recurrent_state

    for t in range(seq_len):
        dt_t = dt[:, t]
        B_t = B[:, t]
        x_t = x[:, t]
        C_t = C[:, t]

        dA_t = np.exp(A * dt_t)
        dBx_t = np.expand_dims(np.expand_dims(dt_t, -1) * B_t, -2) * np.expand_dims(x_t, -1)

        output_recurrent_state = output_recurrent_state * np.expand_dims(np.expand_dims(dA_t, -1), -1) + dBx_t

        output[:, t] = (output_recurrent_state * np.expand_dims(C_t, -2)).sum(axis=-1)

    return output, output_recurrent_state
