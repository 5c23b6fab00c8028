"""Attempt 46 at copy_v2_weights_into_v1 (common slip).

MISTAKE: (common slip) Returns v1 at the end instead of None (the docstring: modify v1 in place and return None).
"""
import torch


def copy_v2_weights_into_v1(v2, v1):
    """MISTAKE: (common slip) returns v1 instead of None."""
    if v2.W_query.bias is not None:
        raise ValueError("v1 has no bias")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
    return v1
