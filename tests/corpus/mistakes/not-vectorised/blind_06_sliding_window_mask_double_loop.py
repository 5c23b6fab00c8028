"""sliding_window_mask: fills the mask entry by entry with two nested Python loops."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    mask = torch.zeros(num_queries, num_keys, dtype=torch.bool, device=device)
    for i in range(num_queries):
        for j in range(num_keys):
            d = (q_start + i) - (k_start + j)
            if d < 0 or (window is not None and d >= window):
                mask[i, j] = True
    return mask
