"""Attempt 47 at copy_v2_weights_into_v1 (common slip).

MISTAKE: (common slip) Forgets the case the docstring asks for: a v2 with biases is copied silently (its biases dropped) instead of raising ValueError.
"""
import torch


def copy_v2_weights_into_v1(v2, v1):
    """MISTAKE: (common slip) no ValueError for a v2 built with qkv_bias=True."""
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
