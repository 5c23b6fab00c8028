"""attention_weights: einsum "...qd,...kd->...qk" times d_k**-0.5, torch.where with -inf, all-hidden rows neutralised before softmax and zeroed after. (written blind, from the contract alone)."""
import torch


def attention_weights(queries, keys, mask=None):
    """Attention weights softmax(Q K^T / sqrt(d_k)); mask True = hidden."""
    scale = keys.shape[-1] ** -0.5
    scores = torch.einsum("...qd,...kd->...qk", queries, keys) * scale
    if mask is None:
        return torch.softmax(scores, dim=-1)
    mask = mask.to(device=scores.device, dtype=torch.bool)
    scores = torch.where(mask, float("-inf"), scores)
    # rows where every key is hidden: put 0 scores there so softmax stays finite, zero them afterwards
    all_hidden = mask.all(dim=-1, keepdim=True)
    scores = torch.where(all_hidden, 0.0, scores)
    weights = torch.softmax(scores, dim=-1)
    return torch.where(mask, 0.0, weights)
