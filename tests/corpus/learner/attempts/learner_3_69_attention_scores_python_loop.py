"""attention_scores: (common slip) kept a Python loop over the query tokens (stacking row @ inputs^T) instead of one batched matrix product."""
import torch


def attention_scores(inputs):
    rows = [inputs[..., i, :] @ inputs.transpose(-2, -1) for i in range(inputs.shape[-2])]
    return torch.stack(rows, dim=-2)
