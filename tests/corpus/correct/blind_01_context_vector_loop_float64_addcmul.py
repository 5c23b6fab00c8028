"""context_vector_loop: Accumulates with torch.addcmul in a float64 buffer and casts the result back to the input dtype (written blind, from the contract alone)."""
import torch


def context_vector_loop(inputs, weights):
    acc = torch.zeros(inputs.shape[-1], dtype=torch.float64, device=inputs.device)
    for i in range(len(weights)):
        acc = torch.addcmul(acc, weights[i].double(), inputs[i].double())
    return acc.to(inputs.dtype)
