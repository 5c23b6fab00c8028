"""Attempt 03 at softmax_naive.

MISTAKE: The denominator e.sum(dim=dim) drops the reduced dimension (no keepdim=True), so for inputs with more than one dim it does not broadcast back along dim (error, or silently wrong for square inputs).
"""
import torch


def softmax_naive(x, dim=-1):
    """MISTAKE: The denominator e.sum(dim=dim) drops the reduced dimension (no keepdim=True), so for inputs with more than one dim it does not broadcast back along dim (error, or silently wrong for square inputs)."""
    e = torch.exp(x)
    return e / e.sum(dim=dim)
