"""simple_self_attention: Uses torch.softmax directly (only the softmax exercise's row forbids library softmax) on inputs @ inputs.mT, then the weighted sum (written blind, from the contract alone)."""
import torch


def simple_self_attention(inputs):
    scores = inputs @ inputs.mT
    return torch.softmax(scores, dim=-1) @ inputs
