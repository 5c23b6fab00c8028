"""context_vector_loop: Builds the weighted rows in a list comprehension, stacks them and sums over the token axis (written blind, from the contract alone)."""
import torch


def context_vector_loop(inputs, weights):
    terms = [weights[i] * inputs[i] for i in range(inputs.shape[0])]
    return torch.stack(terms, dim=0).sum(dim=0)
