import torch
from torch import nn


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    """MISTAKE: compares row and column numbers (arange(num_queries) vs arange(num_keys)) and ignores
    q_start and k_start, so a cached call's mask is the plain top-left triangle."""
    q = torch.arange(num_queries, device=device)[:, None]
    k = torch.arange(num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None:
        hidden = hidden | (k <= q - window)
    return hidden
