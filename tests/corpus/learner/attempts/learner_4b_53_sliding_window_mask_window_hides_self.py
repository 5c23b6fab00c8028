import torch
from torch import nn


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    """MISTAKE: window off by one the other way: hides (q - k) >= window - 1 instead of
    (q - k) >= window, so each query sees itself and only window - 2 tokens before it (window - 1 keys)."""
    q = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    k = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None:
        hidden = hidden | ((q - k) >= window - 1)
    return hidden
