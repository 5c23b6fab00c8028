"""Attempt 12 at simple_self_attention.

MISTAKE: Softmax along dim=1 instead of dim=-1: right for an unbatched [T, T] score table, but for a batch [B, T, T] it normalises over the queries.
"""
import torch


def simple_self_attention(inputs):
    """MISTAKE: Softmax along dim=1 instead of dim=-1: right for an unbatched [T, T] score table, but for a batch [B, T, T] it normalises over the queries."""
    weights = softmax(attention_scores(inputs), dim=1)
    return weights @ inputs
