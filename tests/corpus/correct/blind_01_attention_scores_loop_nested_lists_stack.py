"""attention_scores_loop: Builds a list of lists of (query * key).sum() and stacks twice; no preallocation (written blind, from the contract alone)."""
import torch


def attention_scores_loop(inputs):
    rows = []
    for query in inputs:
        row = []
        for key in inputs:
            row.append((query * key).sum())
        rows.append(torch.stack(row))
    return torch.stack(rows)
