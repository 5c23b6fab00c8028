"""renormalize_causal_weights: Computes tril and the row normalisation in float64, casts back to the input dtype (written blind, from the contract alone)."""
import torch


def renormalize_causal_weights(weights):
    w = weights.to(torch.float64).tril()  # zero the future in double precision
    w = w / w.sum(-1, keepdim=True)
    return w.to(weights.dtype)
