"""sliding_window_mask: window=None replaced by window=num_keys, which still hides old keys when q_start - k_start >= num_keys."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    if window is None:
        window = num_keys
    q_pos = torch.arange(q_start, q_start + num_queries, device=device)
    k_pos = torch.arange(k_start, k_start + num_keys, device=device)
    diff = q_pos[:, None] - k_pos[None, :]
    return (diff < 0) | (diff >= window)
