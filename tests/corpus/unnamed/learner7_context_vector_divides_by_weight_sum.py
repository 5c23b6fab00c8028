"""context_vector_loop: divides each term by weights.sum() (round 7 learner: was said to start from inputs[0] unweighted, which the one-token case also gives).

Assignment 01: attention basics (no trainable weights)."""

import torch

def context_vector_loop(inputs, weights):
    context = torch.zeros_like(inputs[0])
    for i in range(inputs.shape[0]):
        context = context + weights[i] * inputs[i] / weights.sum()
    return context
