"""Attempt 07 at simple_self_attention.

MISTAKE: The softmax of the scores is taken along dim=0 (over the queries / columns) instead of the last dim (over the keys), so rows do not sum to 1.
"""
import torch


def simple_self_attention(inputs):
    """MISTAKE: The softmax of the scores is taken along dim=0 (over the queries / columns) instead of the last dim (over the keys), so rows do not sum to 1."""
    weights = softmax(attention_scores(inputs), dim=0)
    return weights @ inputs
