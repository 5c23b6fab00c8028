"""renormalize_causal_weights: The book's route: multiply by tril(ones) of the weights' dtype, divide by keepdim row sums (written blind, from the contract alone)."""
import torch


def renormalize_causal_weights(weights):
    # the book's "simple" route: multiply by a lower-triangular matrix of ones, divide by the row sums
    T = weights.shape[-1]
    mask_simple = torch.tril(torch.ones(T, T, dtype=weights.dtype, device=weights.device))
    masked_simple = weights * mask_simple
    row_sums = masked_simple.sum(dim=-1, keepdim=True)
    return masked_simple / row_sums
