"""scaled_dot_product_attention: einsum for scores and output, additive finite bias (finfo.min / 2) for hidden keys, F.softmax, weights multiplied by the keep mask. (written blind, from the contract alone)."""
import math

import torch
import torch.nn.functional as F


def scaled_dot_product_attention(queries, keys, values, mask=None):
    """einsum scores with an additive (finite) bias for hidden keys, F.softmax, einsum with values."""
    d_k = queries.size(-1)
    scores = torch.einsum("...id,...jd->...ij", queries, keys) / math.sqrt(d_k)
    if mask is not None:
        hidden = mask.to(device=scores.device, dtype=torch.bool)
        bias = torch.zeros(hidden.shape, dtype=scores.dtype, device=scores.device)
        # half of the most negative number: adding a score cannot overflow to -inf (float16)
        bias = bias.masked_fill(hidden, torch.finfo(scores.dtype).min / 2)
        scores = scores + bias
    weights = F.softmax(scores, dim=-1)
    if mask is not None:
        # exact zeros on hidden keys; an all-hidden row (uniform above) becomes all zeros
        weights = weights * (~hidden).to(weights.dtype)
    return torch.einsum("...ij,...jd->...id", weights, values)
