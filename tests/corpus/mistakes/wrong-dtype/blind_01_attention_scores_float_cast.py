"""attention_scores: Casts the inputs with .float() before the matmul, so float64 inputs give float32 scores (otherwise the right vectorised product) (written blind, from the contract alone)."""
import torch


def attention_scores(inputs):
    x = inputs.float()
    return x @ x.transpose(-2, -1)
