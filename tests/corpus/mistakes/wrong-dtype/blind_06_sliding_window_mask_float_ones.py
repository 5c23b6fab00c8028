"""sliding_window_mask: triu/tril on torch.ones(...) without dtype=bool, so the mask comes back as float 1.0/0.0."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    ones = torch.ones(num_queries, num_keys, device=device)
    shift = q_start - k_start
    mask = torch.triu(ones, diagonal=shift + 1)
    if window is not None:
        mask = torch.maximum(mask, torch.tril(ones, diagonal=shift - window))
    return mask
