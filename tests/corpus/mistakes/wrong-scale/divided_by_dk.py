"""attention_weights: divides by the key size itself."""
import torch


def attention_weights(queries, keys, mask=None):
    d_k = keys.shape[-1]
    scores = torch.matmul(queries, keys.transpose(-2, -1)) / d_k
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1).nan_to_num(0.0)
