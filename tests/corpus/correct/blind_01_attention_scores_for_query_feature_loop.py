"""attention_scores_for_query: Fully scalar version: loop over rows and, inside, over features accumulating inputs[i, k] * query[k] into a zeros tensor with the input's dtype/device (written blind, from the contract alone)."""
import torch


def attention_scores_for_query(inputs, query):
    T, d = inputs.shape
    scores = torch.zeros(T, dtype=inputs.dtype, device=inputs.device)
    for i in range(T):
        total = inputs[i, 0] * query[0]
        for k in range(1, d):
            total = total + inputs[i, k] * query[k]
        scores[i] = total
    return scores
