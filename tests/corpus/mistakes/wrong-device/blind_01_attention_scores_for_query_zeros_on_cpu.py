"""attention_scores_for_query: Allocates the result with torch.zeros(T, dtype=inputs.dtype) but no device, so CUDA inputs give a CPU output (right values; only visible on a GPU) (written blind, from the contract alone)."""
import torch


def attention_scores_for_query(inputs, query):
    scores = torch.zeros(len(inputs), dtype=inputs.dtype)
    for i in range(len(inputs)):
        scores[i] = torch.dot(inputs[i], query)
    return scores
