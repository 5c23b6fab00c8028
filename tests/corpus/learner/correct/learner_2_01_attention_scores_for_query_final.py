"""attention_scores_for_query: Final correct version."""
import torch


def attention_scores_for_query(inputs, query):
    """Attention scores of one query against every input row, written as a loop over rows.

    inputs: [T, d], query: [d]  ->  scores: [T], where scores[i] = inputs[i] . query
    Lesson section 1, "Scores for one query".
    """
    T = inputs.shape[0]
    scores = inputs.new_empty(T)
    for i in range(T):
        scores[i] = torch.dot(inputs[i], query)
    return scores
