"""Attempt 18 at scaled_dot_product_attention.

MISTAKE: The mask argument is accepted but never passed on: attention_weights(queries, keys) is called without mask, so hidden keys are still attended to.
"""
import math
import torch
from torch import nn


def scaled_dot_product_attention(queries, keys, values, mask=None):
    """MISTAKE: The mask argument is accepted but never passed on: attention_weights(queries, keys) is called without mask, so hidden keys are still attended to."""
    weights = attention_weights(queries, keys)
    return weights @ values
