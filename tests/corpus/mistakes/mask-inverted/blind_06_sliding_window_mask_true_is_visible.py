"""sliding_window_mask: returns True for the visible band (the F.scaled_dot_product_attention convention) instead of True = hidden."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q = torch.arange(num_queries, device=device).view(-1, 1) + q_start
    k = torch.arange(num_keys, device=device).view(1, -1) + k_start
    allowed = k <= q
    if window is not None:
        allowed = allowed & (k > q - window)
    return allowed
