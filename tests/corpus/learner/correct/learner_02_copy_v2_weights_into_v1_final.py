"""copy_v2_weights_into_v1: ValueError for biases, then copy_ the transposed weights under no_grad"""
import torch


def copy_v2_weights_into_v1(v2, v1):
    for layer in (v2.W_query, v2.W_key, v2.W_value):
        if layer.bias is not None:
            raise ValueError("SelfAttention_v1 has no biases: cannot copy a v2 with qkv_bias=True")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
