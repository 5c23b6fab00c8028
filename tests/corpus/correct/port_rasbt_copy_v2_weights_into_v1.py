"""copy_v2_weights_into_v1: port of rasbt/LLMs-from-scratch ch03/01_main-chapter-code/ch03.ipynb exercise 3.1 (each nn.Linear weight, transposed, copied into v1's parameters under no_grad; a v2 with biases refused)"""
import torch


def copy_v2_weights_into_v1(v2, v1):
    if any(l.bias is not None for l in (v2.W_query, v2.W_key, v2.W_value)):
        raise ValueError("SelfAttention_v1 has no biases")
    with torch.no_grad():
        v1.W_query.copy_(v2.W_query.weight.T)
        v1.W_key.copy_(v2.W_key.weight.T)
        v1.W_value.copy_(v2.W_value.weight.T)
