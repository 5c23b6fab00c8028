"""simple_self_attention: Composes the module's own attention_scores and softmax(dim=-1), then multiplies the weights by the inputs (written blind, from the contract alone)."""
import torch


def simple_self_attention(inputs):
    attn_scores = attention_scores(inputs)            # [..., T, T]
    attn_weights = softmax(attn_scores, dim=-1)       # each query's row sums to 1
    return attn_weights @ inputs                      # [..., T, d]
