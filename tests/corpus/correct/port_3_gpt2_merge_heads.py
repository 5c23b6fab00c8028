"""merge_heads ported from openai/gpt-2 src/model.py merge_states + attn.merge_heads (TensorFlow -> PyTorch).

Source: https://github.com/openai/gpt-2/blob/master/src/model.py (merge_states, merge_heads)
Kept: transpose [0, 2, 1, 3], then merge_states smashes the last two dims into one.
Adapted: tf.transpose/tf.reshape -> torch permute/reshape.
"""
import torch


def _gpt2_merge_states(x):
    """Smash the last two dimensions of x into a single dimension."""
    *start, a, b = x.shape
    return torch.reshape(x, start + [a * b])


def merge_heads(x):
    # Reverse of split_heads
    return _gpt2_merge_states(x.permute(0, 2, 1, 3))
