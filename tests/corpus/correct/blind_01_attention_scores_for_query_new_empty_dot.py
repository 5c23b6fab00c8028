"""attention_scores_for_query: Preallocates with inputs.new_empty(T) and fills each slot with torch.dot(row, query) in an enumerate loop (written blind, from the contract alone)."""
import torch


def attention_scores_for_query(inputs, query):
    scores = inputs.new_empty(inputs.shape[0])
    for i, x_i in enumerate(inputs):
        scores[i] = torch.dot(x_i, query)
    return scores
