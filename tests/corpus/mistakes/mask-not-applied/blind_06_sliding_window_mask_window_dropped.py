"""sliding_window_mask: the window condition is combined with a non-in-place logical_or whose result is dropped, so only the causal part survives."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    q_pos = torch.arange(q_start, q_start + num_queries, device=device)
    k_pos = torch.arange(k_start, k_start + num_keys, device=device)
    diff = q_pos[:, None] - k_pos[None, :]
    mask = diff < 0
    if window is not None:
        mask.logical_or(diff >= window)
    return mask
