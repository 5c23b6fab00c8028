"""copy_v2_weights_into_v1: copied layer.weight without transposing it"""
import torch


def copy_v2_weights_into_v1(v2, v1):
    if v2.W_query.bias is not None:
        raise ValueError("v1 has no biases")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight)
        v1.W_key.copy_(v2.W_key.weight)
        v1.W_value.copy_(v2.W_value.weight)
