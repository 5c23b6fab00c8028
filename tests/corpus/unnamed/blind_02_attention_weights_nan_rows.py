"""attention_weights: Book-style masked_fill with -inf and no special case, so a query row whose keys are all hidden gets NaN weights instead of zeros. (written blind, from the contract alone). The blind author filed it as unnamed."""
import torch


def attention_weights(queries, keys, mask=None):
    attn_scores = queries @ keys.transpose(-2, -1)
    if mask is not None:
        attn_scores = attn_scores.masked_fill(mask, -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
    return attn_weights
