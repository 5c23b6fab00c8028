"""attention_scores_for_query: one dot product per row, stacked."""
import torch


def attention_scores_for_query(inputs, query):
    return torch.stack([row @ query for row in inputs])
