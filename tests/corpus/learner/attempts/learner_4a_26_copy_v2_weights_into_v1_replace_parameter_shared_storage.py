"""Attempt 26 at copy_v2_weights_into_v1.

MISTAKE: Replaces v1's parameters with new nn.Parameter(v2.weight.T) objects instead of copying into the existing ones under no_grad: v1 now shares storage with v2 (and old parameter objects held by e.g. an optimiser are left untouched).
"""
import math
import torch
from torch import nn


def copy_v2_weights_into_v1(v2, v1):
    """MISTAKE: Replaces v1's parameters with new nn.Parameter(v2.weight.T) objects instead of copying into the existing ones under no_grad: v1 now shares storage with v2 (and old parameter objects held by e.g. an optimiser are left untouched)."""
    if v2.W_query.bias is not None:
        raise ValueError('v1 has no bias')
    v1.W_query = nn.Parameter(v2.W_query.weight.T)
    v1.W_key = nn.Parameter(v2.W_key.weight.T)
    v1.W_value = nn.Parameter(v2.W_value.weight.T)
