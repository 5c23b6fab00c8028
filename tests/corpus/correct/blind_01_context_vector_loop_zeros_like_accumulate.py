"""context_vector_loop: Lesson style: start from zeros_like(inputs[0]) and accumulate context = context + weights[i] * inputs[i] (written blind, from the contract alone)."""
import torch


def context_vector_loop(inputs, weights):
    context = torch.zeros_like(inputs[0])
    for i, x_i in enumerate(inputs):
        context = context + weights[i] * x_i
    return context
