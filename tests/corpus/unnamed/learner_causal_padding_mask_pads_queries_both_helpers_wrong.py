"""causal_padding_mask: pads the queries (rows) instead of the keys, while causal_mask hides the diagonal too and padding_mask is off by one (issue 46: with both helpers broken only the figure told the learner; the run with right helpers says it)."""
import torch


def causal_mask(num_tokens, device=None):
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool, device=device), diagonal=0)


def padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device) > lengths[:, None]


def causal_padding_mask(lengths, num_tokens):
    future = causal_mask(num_tokens, device=lengths.device)
    padding = padding_mask(lengths, num_tokens)
    return future[None, :, :] | padding[:, :, None]
