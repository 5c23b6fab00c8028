"""simple_self_attention: Calls F.scaled_dot_product_attention with its default 1/sqrt(d) scale, although assignment 01's attention is unscaled (a scale where none belongs; no catalogue id) (written blind, from the contract alone). The blind author filed it as unnamed."""
import torch
import torch.nn.functional as F


def simple_self_attention(inputs):
    return F.scaled_dot_product_attention(inputs, inputs, inputs)
