"""Attempt 01 at attention_scores_for_query.

MISTAKE: The result is allocated with torch.empty(T), which is always float32 (and on the CPU), so float64 inputs give a float32 output; should use inputs.new_empty(T).
"""
import torch


def attention_scores_for_query(inputs, query):
    """MISTAKE: The result is allocated with torch.empty(T), which is always float32 (and on the CPU), so float64 inputs give a float32 output; should use inputs.new_empty(T)."""
    T = inputs.shape[0]
    scores = torch.empty(T)
    for i in range(T):
        scores[i] = torch.dot(inputs[i], query)
    return scores
