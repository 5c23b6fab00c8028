"""apply_causal_mask: hides key j when j >= i."""
import torch


def apply_causal_mask(scores):
    idx = torch.arange(scores.shape[-1], device=scores.device)
    return scores.masked_fill(idx.view(1, -1) >= idx.view(-1, 1), float("-inf"))
