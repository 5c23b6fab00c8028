"""copy_v2_weights_into_v1: Copies v2's value weight into v1's `W_query` and v2's query weight into v1's `W_value`. (written blind, from the contract alone)."""
import torch


def copy_v2_weights_into_v1(v2, v1):
    with torch.no_grad():
        # Query and value weights copied into each other's slot.
        v1.W_query.copy_(v2.W_value.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_query.weight.T)
