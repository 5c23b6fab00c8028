"""attention_scores_for_query: Accumulates each torch.inner(row, query) in a float64 buffer and casts back to the input dtype at the end (written blind, from the contract alone)."""
import torch


def attention_scores_for_query(inputs, query):
    q = query.to(torch.float64)
    out = torch.empty(inputs.shape[0], dtype=torch.float64, device=inputs.device)
    for i in range(inputs.shape[0]):
        out[i] = torch.inner(inputs[i].to(torch.float64), q)
    return out.to(inputs.dtype)
