"""Attempt 02 at attention_scores_loop.

MISTAKE: To use the symmetry, the inner loop runs j in range(i), which stops before j == i: the diagonal (each token with itself) is never filled and stays 0.
"""
import torch


def attention_scores_loop(inputs):
    """MISTAKE: To use the symmetry, the inner loop runs j in range(i), which stops before j == i: the diagonal (each token with itself) is never filled and stays 0."""
    T = inputs.shape[0]
    scores = inputs.new_zeros(T, T)
    for i in range(T):
        for j in range(i):
            s = torch.dot(inputs[i], inputs[j])
            scores[i, j] = s
            scores[j, i] = s
    return scores
