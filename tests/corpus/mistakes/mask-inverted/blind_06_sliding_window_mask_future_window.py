"""sliding_window_mask: distance taken as key minus query, so the past is hidden and each query sees itself and the window - 1 keys after it."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q_pos = torch.arange(q_start, q_start + num_queries, device=device)
    k_pos = torch.arange(k_start, k_start + num_keys, device=device)
    diff = k_pos[None, :] - q_pos[:, None]
    mask = diff < 0
    if window is not None:
        mask = mask | (diff >= window)
    return mask
