"""scaled_dot_product_attention: attention_weights(q, k, mask) @ values"""
import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    return attention_weights(queries, keys, mask) @ values
