"""attention_scores_for_query: Collects (row * query).sum() for each row in a Python list and torch.stack's it (written blind, from the contract alone)."""
import torch


def attention_scores_for_query(inputs, query):
    scores = []
    for row in inputs:
        scores.append((row * query).sum())
    return torch.stack(scores)
