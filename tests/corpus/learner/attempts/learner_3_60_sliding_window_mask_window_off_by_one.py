"""sliding_window_mask: hid keys with k < q - window instead of k <= q - window, so each query sees window + 1 tokens."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    k = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None:
        hidden = hidden | (k < q - window)
    return hidden
