"""Attempt 28 at copy_v2_weights_into_v1.

MISTAKE: param.copy_(weight.T) is called outside torch.no_grad(): autograd refuses an in-place copy into a leaf parameter that requires grad (RuntimeError). The in-place copy itself is what the exercise asks for.
"""
import math
import torch
from torch import nn


def copy_v2_weights_into_v1(v2, v1):
    """MISTAKE: param.copy_(weight.T) is called outside torch.no_grad(): autograd refuses an in-place copy into a leaf parameter that requires grad (RuntimeError). The in-place copy itself is what the exercise asks for."""
    if v2.W_query.bias is not None:
        raise ValueError('v1 has no bias')
    v1.W_query.copy_(v2.W_query.weight.T)
    v1.W_key.copy_(v2.W_key.weight.T)
    v1.W_value.copy_(v2.W_value.weight.T)
