"""Attempt 14 at simple_self_attention.

MISTAKE: Calls torch.softmax instead of the learner's own softmax as the docstring asks ('using your softmax above'); numerically the same, so it is a spec violation only.
"""
import torch


def simple_self_attention(inputs):
    """MISTAKE: Calls torch.softmax instead of the learner's own softmax as the docstring asks ('using your softmax above'); numerically the same, so it is a spec violation only."""
    weights = torch.softmax(attention_scores(inputs), dim=-1)
    return weights @ inputs
