"""sliding_window_mask: hides keys more than window tokens back, so each query sees window + 1 tokens."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q_pos = torch.arange(q_start, q_start + num_queries, device=device)
    k_pos = torch.arange(k_start, k_start + num_keys, device=device)
    distance = q_pos[:, None] - k_pos[None, :]  # how far back each key is
    mask = distance < 0
    if window is not None:
        mask = mask | (distance > window)
    return mask
