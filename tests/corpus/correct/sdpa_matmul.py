"""scaled_dot_product_attention: written out with torch.matmul, masking with the dtype's lowest value."""
import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    scores = torch.matmul(queries, keys.transpose(-1, -2)) * keys.shape[-1] ** -0.5
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return torch.matmul(weights.nan_to_num(0.0), values)
