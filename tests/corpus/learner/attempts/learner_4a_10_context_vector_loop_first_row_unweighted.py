"""Attempt 10 at context_vector_loop.

MISTAKE: Starts the sum from context = inputs[0] (the first row unweighted) and loops from 1: the first term should be weights[0] * inputs[0] (off-by-one start).
"""
import torch


def context_vector_loop(inputs, weights):
    """MISTAKE: Starts the sum from context = inputs[0] (the first row unweighted) and loops from 1: the first term should be weights[0] * inputs[0] (off-by-one start)."""
    context = inputs[0]
    for i in range(1, inputs.shape[0]):
        context = context + weights[i] * inputs[i]
    return context
