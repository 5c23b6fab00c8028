"""simple_self_attention: F.scaled_dot_product_attention(x, x, x, scale=1.0): the library kernel with the default 1/sqrt(d) scale switched off (not forbidden in this exercise's row) (written blind, from the contract alone)."""
import torch
import torch.nn.functional as F


def simple_self_attention(inputs):
    # the lesson's attention is unscaled, so override SDPA's default 1/sqrt(d) with scale=1.0
    return F.scaled_dot_product_attention(inputs, inputs, inputs, scale=1.0)
