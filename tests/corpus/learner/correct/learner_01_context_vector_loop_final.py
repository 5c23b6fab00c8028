"""context_vector_loop: start from zeros_like(inputs[0]) and add weights[i] * inputs[i]"""
import torch


def context_vector_loop(inputs, weights):
    context = torch.zeros_like(inputs[0])
    for i in range(inputs.shape[0]):
        context = context + weights[i] * inputs[i]
    return context
