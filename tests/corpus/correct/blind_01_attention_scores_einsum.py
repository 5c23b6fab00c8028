"""attention_scores: torch.einsum('...qd,...kd->...qk') with ellipsis batch dims (written blind, from the contract alone)."""
import torch


def attention_scores(inputs):
    return torch.einsum("...qd,...kd->...qk", inputs, inputs)
