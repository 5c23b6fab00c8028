"""simple_self_attention: Works in float64 (scores, the module's softmax with a positive dim index, weighted sum) and casts back to the input dtype (written blind, from the contract alone)."""
import torch


def simple_self_attention(inputs):
    x = inputs.double()
    w = softmax(torch.matmul(x, x.transpose(-1, -2)), dim=x.dim() - 1)
    return torch.matmul(w, x).to(inputs.dtype)
