"""apply_causal_mask: computes the masked copy but returns the original."""
import torch


def apply_causal_mask(scores):
    n = scores.shape[-1]
    rows = torch.arange(n, device=scores.device)
    scores.masked_fill(rows[None, :] > rows[:, None], float("-inf"))
    return scores.clone()
