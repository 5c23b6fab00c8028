"""scaled_dot_product_attention: Book ch03 style: queries @ keys.transpose, in-place masked_fill_ with -inf on its own score tensor (all-hidden rows kept finite then zeroed), softmax(scores / d_k**0.5) @ values. (written blind, from the contract alone)."""
import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    """Book (ch03) style: scores, masked_fill_ with -inf, softmax of scores / sqrt(d_k), weights @ values."""
    attn_scores = queries @ keys.transpose(-2, -1)
    if mask is not None:
        mask = mask.to(attn_scores.device).bool()
        # rows whose keys are all hidden would give softmax(-inf, ..., -inf) = NaN: keep them finite
        all_hidden = mask.all(dim=-1, keepdim=True)
        attn_scores = attn_scores.masked_fill(all_hidden, 0.0)
        attn_scores.masked_fill_(mask & ~all_hidden, -torch.inf)  # in place on our own tensor only
    attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
    if mask is not None:
        attn_weights = attn_weights.masked_fill(all_hidden, 0.0)
    context_vec = attn_weights @ values
    return context_vec
