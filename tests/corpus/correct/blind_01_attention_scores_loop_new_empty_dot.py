"""attention_scores_loop: Book style: new_empty(T, T) filled by two nested enumerate loops with torch.dot (written blind, from the contract alone)."""
import torch


def attention_scores_loop(inputs):
    T = inputs.shape[0]
    scores = inputs.new_empty(T, T)
    for i, x_i in enumerate(inputs):
        for j, x_j in enumerate(inputs):
            scores[i, j] = torch.dot(x_i, x_j)
    return scores
