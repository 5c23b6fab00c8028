import torch
from torch import nn


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    """MISTAKE (common slip): returns a float 0/1 mask instead of a boolean one."""
    q = torch.arange(q_start, q_start + num_queries, device=device)[:, None]
    k = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None:
        hidden = hidden | (k <= q - window)
    return hidden.float()
