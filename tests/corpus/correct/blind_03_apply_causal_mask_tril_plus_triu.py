"""apply_causal_mask: scores.tril() plus a full -inf tensor's triu(diagonal=1) (written blind, from the contract alone)."""
import torch


def apply_causal_mask(scores):
    # lower triangle (diagonal included) of the scores + -inf strictly above the diagonal
    upper = torch.full_like(scores, float("-inf")).triu(diagonal=1)
    return scores.tril() + upper
