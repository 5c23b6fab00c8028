"""split_heads: Copies the book's assert, so an indivisible D raises AssertionError instead of the required ValueError. (written blind, from the contract alone). The blind author filed it as unnamed."""
import torch


def split_heads(x, num_heads):
    b, num_tokens, d = x.shape
    assert d % num_heads == 0, "d_out must be divisible by num_heads"
    head_dim = d // num_heads
    x = x.reshape(b, num_tokens, num_heads, head_dim)
    return x.transpose(1, 2)
