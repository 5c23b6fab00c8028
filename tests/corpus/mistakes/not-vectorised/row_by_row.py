"""attention_scores: one row of scores per token, stacked."""
import torch


def attention_scores(inputs):
    rows = []
    for i in range(inputs.shape[-2]):
        query = inputs[..., i, :]
        rows.append((inputs * query.unsqueeze(-2)).sum(dim=-1))
    return torch.stack(rows, dim=-2)
