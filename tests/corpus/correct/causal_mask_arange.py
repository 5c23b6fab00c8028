"""causal_mask: key index greater than query index, from two aranges."""
import torch


def causal_mask(num_tokens, device=None):
    i = torch.arange(num_tokens, device=device)
    return i[None, :] > i[:, None]
