"""simple_self_attention: a context vector per query, computed in a loop."""
import torch


def simple_self_attention(inputs):
    contexts = []
    for t in range(inputs.shape[-2]):
        scores = inputs @ inputs[..., t, :].unsqueeze(-1)
        weights = softmax(scores.squeeze(-1), dim=-1)
        contexts.append((weights.unsqueeze(-1) * inputs).sum(dim=-2))
    return torch.stack(contexts, dim=-2)
