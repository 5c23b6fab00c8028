"""Attempt 21 at copy_v2_weights_into_v1.

MISTAKE: Copies the nn.Linear weight [d_out, d_in] straight into the v1 matrix [d_in, d_out] without transposing (.T): shape error when d_in != d_out, wrong result when square.
"""
import math
import torch
from torch import nn


def copy_v2_weights_into_v1(v2, v1):
    """MISTAKE: Copies the nn.Linear weight [d_out, d_in] straight into the v1 matrix [d_in, d_out] without transposing (.T): shape error when d_in != d_out, wrong result when square."""
    if v2.W_query.bias is not None:
        raise ValueError('v1 has no bias')
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight)
        v1.W_key.copy_(v2.W_key.weight)
        v1.W_value.copy_(v2.W_value.weight)
