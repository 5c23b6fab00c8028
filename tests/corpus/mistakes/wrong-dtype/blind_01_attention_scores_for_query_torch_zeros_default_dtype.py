"""attention_scores_for_query: Allocates the result with torch.zeros(T) (default float32, right device), so float64 inputs give a float32 output; values otherwise right (written blind, from the contract alone)."""
import torch


def attention_scores_for_query(inputs, query):
    scores = torch.zeros(inputs.shape[0], device=inputs.device)
    for i in range(inputs.shape[0]):
        scores[i] = torch.dot(inputs[i], query)
    return scores
