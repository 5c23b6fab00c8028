"""Attempt 05 at context_vector_loop.

MISTAKE: The loop runs over range(inputs.shape[1]) (the d features) instead of range(inputs.shape[0]) (the T tokens): too many or too few rows are summed, IndexError when d > T.
"""
import torch


def context_vector_loop(inputs, weights):
    """MISTAKE: The loop runs over range(inputs.shape[1]) (the d features) instead of range(inputs.shape[0]) (the T tokens): too many or too few rows are summed, IndexError when d > T."""
    context = torch.zeros_like(inputs[0])
    for i in range(inputs.shape[1]):
        context = context + weights[i] * inputs[i]
    return context
