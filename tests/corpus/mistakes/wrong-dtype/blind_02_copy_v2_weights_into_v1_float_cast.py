"""copy_v2_weights_into_v1: Book-style new Parameters but with `.float()` added, so float64 modules get float32 weights. (written blind, from the contract alone)."""
import torch


def copy_v2_weights_into_v1(v2, v1):
    # Casts to float32 "to be safe": a float64 v1 ends up with float32 parameters.
    v1.W_query = torch.nn.Parameter(v2.W_query.weight.detach().T.float().clone())
    v1.W_key = torch.nn.Parameter(v2.W_key.weight.detach().T.float().clone())
    v1.W_value = torch.nn.Parameter(v2.W_value.weight.detach().T.float().clone())
