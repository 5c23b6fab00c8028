"""attention_scores_for_query: allocated the result with torch.empty(T), so it is always float32 (and on CPU) instead of the inputs' dtype."""
import torch


def attention_scores_for_query(inputs, query):
    T = inputs.shape[0]
    scores = torch.empty(T)
    for i in range(T):
        scores[i] = torch.dot(inputs[i], query)
    return scores
