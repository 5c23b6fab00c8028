"""sliding_window_mask: forgot q_start, placing the queries at positions 0..num_queries-1 whatever the cache holds."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q = torch.arange(num_queries, device=device)[:, None]
    k = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None:
        hidden = hidden | (k <= q - window)
    return hidden
