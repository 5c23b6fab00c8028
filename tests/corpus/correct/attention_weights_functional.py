"""attention_weights: F.softmax, and torch.where to zero the rows with nothing visible."""
import torch
import torch.nn.functional as F


def attention_weights(queries, keys, mask=None):
    d_k = keys.size(-1)
    scores = torch.matmul(queries, keys.transpose(-2, -1)) / d_k ** 0.5
    if mask is None:
        return F.softmax(scores, dim=-1)
    weights = F.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return torch.where(mask.all(dim=-1, keepdim=True), torch.zeros_like(weights), weights)
