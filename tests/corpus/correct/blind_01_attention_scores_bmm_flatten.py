"""attention_scores: Flattens all leading dims into one with reshape, uses torch.bmm against a permute, and reshapes back (works for zero batch dims) (written blind, from the contract alone)."""
import torch


def attention_scores(inputs):
    *batch, T, d = inputs.shape
    flat = inputs.reshape(-1, T, d)                 # [B, T, d], B = prod(batch) (1 for none)
    scores = torch.bmm(flat, flat.permute(0, 2, 1))  # [B, T, T]
    return scores.reshape(*batch, T, T)
