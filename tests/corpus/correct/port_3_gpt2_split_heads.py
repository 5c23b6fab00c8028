"""split_heads ported from openai/gpt-2 src/model.py split_states + attn.split_heads (TensorFlow -> PyTorch).

Source: https://github.com/openai/gpt-2/blob/master/src/model.py (split_states, split_heads)
Kept: split_states reshapes the last dim into [n, m//n]; split_heads transposes [0, 2, 1, 3].
Adapted: tf.reshape/tf.transpose -> torch reshape/permute; GPT-2 asserts n_state % n_head == 0 in attn(), the
course asks for a ValueError.
"""
import torch


def _gpt2_split_states(x, n):
    """Reshape the last dimension of x into [n, x.shape[-1]/n]."""
    *start, m = x.shape
    return torch.reshape(x, start + [n, m // n])


def split_heads(x, num_heads):
    if x.shape[-1] % num_heads != 0:
        raise ValueError("n_state % n_head != 0")
    # From [batch, sequence, features] to [batch, heads, sequence, features]
    return _gpt2_split_states(x, num_heads).permute(0, 2, 1, 3)
