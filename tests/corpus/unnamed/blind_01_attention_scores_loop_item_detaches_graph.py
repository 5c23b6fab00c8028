"""attention_scores_loop: Collects Python floats with .item() and rebuilds the table with torch.tensor(..., dtype, device): values, dtype and device right, but the output is cut from the autograd graph (no gradients) (written blind, from the contract alone)."""
import torch


def attention_scores_loop(inputs):
    T = inputs.shape[0]
    values = [[torch.dot(inputs[i], inputs[j]).item() for j in range(T)] for i in range(T)]
    return torch.tensor(values, dtype=inputs.dtype, device=inputs.device)
