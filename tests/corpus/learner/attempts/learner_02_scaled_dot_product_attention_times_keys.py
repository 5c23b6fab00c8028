"""scaled_dot_product_attention: multiplied the weights by the keys instead of the values"""
import torch


def scaled_dot_product_attention(queries, keys, values, mask=None):
    weights = attention_weights(queries, keys, mask)
    return weights @ keys
