"""context_vector_loop: started the accumulator with zeros_like(weights) ([T]) instead of one input row ([d])."""
import torch


def context_vector_loop(inputs, weights):
    context = torch.zeros_like(weights)
    for i in range(inputs.shape[0]):
        context = context + weights[i] * inputs[i]
    return context
