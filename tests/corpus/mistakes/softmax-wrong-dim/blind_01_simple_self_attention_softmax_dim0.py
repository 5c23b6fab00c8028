"""simple_self_attention: Normalises the scores with the module's softmax along dim=0 (over queries for 2-d input, over the batch for batched input) instead of the last dim (written blind, from the contract alone)."""
import torch


def simple_self_attention(inputs):
    scores = inputs @ inputs.transpose(-2, -1)
    weights = softmax(scores, dim=0)
    return weights @ inputs
