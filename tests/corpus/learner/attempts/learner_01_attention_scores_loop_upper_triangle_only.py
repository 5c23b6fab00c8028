"""attention_scores_loop: used the symmetry to only loop j >= i, but forgot to fill in the lower triangle"""
import torch


def attention_scores_loop(inputs):
    T = inputs.shape[0]
    scores = inputs.new_zeros(T, T)
    for i in range(T):
        for j in range(i, T):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    return scores
