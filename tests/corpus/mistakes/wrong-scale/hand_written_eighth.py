"""attention_weights: divides by 8, the square root of the lesson's key size 64."""
import torch


def attention_weights(queries, keys, mask=None):
    scores = queries @ keys.transpose(-2, -1) / 8
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.softmax(scores, -1).masked_fill(mask.all(-1, keepdim=True), 0.0)
    return torch.softmax(scores, -1)
