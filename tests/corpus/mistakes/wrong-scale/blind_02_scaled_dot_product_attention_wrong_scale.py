"""scaled_dot_product_attention: Divides the scores by d_k instead of sqrt(d_k); masking, softmax and the product with values are right. (written blind, from the contract alone)."""
import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    d_k = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1) / d_k
    if mask is not None:
        mask = mask.to(device=scores.device, dtype=torch.bool)
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask, 0.0)
    return weights @ values
