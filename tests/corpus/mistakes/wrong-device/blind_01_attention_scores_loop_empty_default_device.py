"""attention_scores_loop: Preallocates with torch.empty(T, T, dtype=inputs.dtype) on the default device, so CUDA inputs give a CPU table (right values; only visible on a GPU) (written blind, from the contract alone)."""
import torch


def attention_scores_loop(inputs):
    T = inputs.shape[0]
    scores = torch.empty(T, T, dtype=inputs.dtype)
    for i in range(T):
        for j in range(T):
            scores[i, j] = inputs[i] @ inputs[j]
    return scores
