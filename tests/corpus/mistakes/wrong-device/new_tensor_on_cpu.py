"""apply_causal_mask: builds the -inf matrix on the CPU."""
import torch


def apply_causal_mask(scores):
    T = scores.size(-1)
    penalty = torch.zeros(T, T, dtype=scores.dtype).masked_fill(torch.ones(T, T).triu(1).bool(), float("-inf"))
    return scores.cpu() + penalty
