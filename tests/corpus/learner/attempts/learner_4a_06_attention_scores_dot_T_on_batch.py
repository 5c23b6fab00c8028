"""Attempt 06 at attention_scores.

MISTAKE: Uses inputs.T, which reverses every dimension of a batched [..., T, d] tensor, instead of transposing only the last two dims (inputs.transpose(-2, -1)); fails on batches.
"""
import torch


def attention_scores(inputs):
    """MISTAKE: Uses inputs.T, which reverses every dimension of a batched [..., T, d] tensor, instead of transposing only the last two dims (inputs.transpose(-2, -1)); fails on batches."""
    return inputs @ inputs.T
