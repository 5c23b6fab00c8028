"""context_vector_loop: Scales each row in place with inputs[i] *= weights[i] before adding it: the context vector is right but the caller's inputs are overwritten (written blind, from the contract alone)."""
import torch


def context_vector_loop(inputs, weights):
    context = torch.zeros_like(inputs[0])
    for i in range(inputs.shape[0]):
        inputs[i] *= weights[i]          # scale row i ...
        context = context + inputs[i]    # ... then add it
    return context
