"""attention_scores_for_query: loop over rows, dot each with the query, result from inputs.new_empty"""
import torch


def attention_scores_for_query(inputs, query):
    T = inputs.shape[0]
    scores = inputs.new_empty(T)
    for i in range(T):
        scores[i] = torch.dot(inputs[i], query)
    return scores
