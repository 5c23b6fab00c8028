"""simple_self_attention: Uses the module's softmax_naive instead of the stable softmax: right for small inputs, NaN once scores pass ~88 in float32 (written blind, from the contract alone)."""
import torch


def simple_self_attention(inputs):
    weights = softmax_naive(attention_scores(inputs), dim=-1)
    return weights @ inputs
