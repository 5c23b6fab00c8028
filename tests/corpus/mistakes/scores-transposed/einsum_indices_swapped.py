"""scaled_dot_product_attention: an einsum whose output indices put the keys first."""
import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    scores = torch.einsum("...qd,...kd->...kq", queries, keys) / keys.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ values
