"""causal_padding_mask: lower triangle for the causal part."""
import torch


def causal_padding_mask(lengths, num_tokens):
    causal = torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=lengths.device))
    pad = torch.arange(num_tokens, device=lengths.device)[None, :] >= lengths[:, None]
    return causal.unsqueeze(0) | pad.unsqueeze(1)
