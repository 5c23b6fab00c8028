"""sliding_window_mask: builds the mask with triu and tril from position 0, ignoring q_start and k_start."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    ones = torch.ones(num_queries, num_keys, dtype=torch.bool, device=device)
    hidden = torch.triu(ones, diagonal=1)  # keys after the query
    if window is not None:
        hidden = hidden | torch.tril(ones, diagonal=-window)  # keys window or more tokens back
    return hidden
