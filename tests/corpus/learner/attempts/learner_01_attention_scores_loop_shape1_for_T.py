"""attention_scores_loop: took T from inputs.shape[1] (the feature size) instead of shape[0]"""
import torch


def attention_scores_loop(inputs):
    T = inputs.shape[1]
    scores = inputs.new_empty(T, T)
    for i in range(T):
        for j in range(T):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    return scores
