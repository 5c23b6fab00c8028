"""attention_scores_loop: two nested loops over all (i, j) pairs"""
import torch


def attention_scores_loop(inputs):
    T = inputs.shape[0]
    scores = inputs.new_empty(T, T)
    for i in range(T):
        for j in range(T):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    return scores
