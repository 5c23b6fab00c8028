"""sliding_window_mask: hides keys with diff <= 0, so a query never sees its own position."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q_pos = torch.arange(q_start, q_start + num_queries, device=device)
    k_pos = torch.arange(k_start, k_start + num_keys, device=device)
    diff = q_pos.unsqueeze(-1) - k_pos.unsqueeze(0)
    mask = diff <= 0
    if window is not None:
        mask = mask | (diff >= window)
    return mask
