"""copy_v2_weights_into_v1: In-place `copy_` of each transposed Linear weight into the existing v1 parameter under `torch.no_grad()`. (written blind, from the contract alone). Under the contract's row it is a mistake: a v2 with biases is copied (biases dropped) instead of raising ValueError (issue 34, item 9)."""
import torch
from torch import nn


def copy_v2_weights_into_v1(v2, v1):
    """Copy the nn.Linear weights of a SelfAttention_v2 into the raw parameters of a SelfAttention_v1.

    nn.Linear stores its weight as [d_out, d_in] and computes x @ W.T, while v1 computes x @ W
    with W of shape [d_in, d_out], so each weight is transposed on the way.
    """
    with torch.no_grad():
        for name in ("W_query", "W_key", "W_value"):
            getattr(v1, name).copy_(getattr(v2, name).weight.T)
    return None
