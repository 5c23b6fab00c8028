"""simple_self_attention: Two einsums (scores and weighted sum) around the module's softmax over the last dim (written blind, from the contract alone)."""
import torch


def simple_self_attention(inputs):
    scores = torch.einsum("...id,...jd->...ij", inputs, inputs)
    weights = softmax(scores, dim=-1)
    return torch.einsum("...ij,...jd->...id", weights, inputs)
