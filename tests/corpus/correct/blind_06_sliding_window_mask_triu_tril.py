"""sliding_window_mask: triu for the future and tril for the far past, diagonals shifted by the start offsets."""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    ones = torch.ones(num_queries, num_keys, dtype=torch.bool, device=device)
    shift = q_start - k_start
    # key j is in the future of query i when (k_start + j) - (q_start + i) >= 1
    mask = torch.triu(ones, diagonal=shift + 1)
    if window is not None:
        # key j is too old when (q_start + i) - (k_start + j) >= window
        mask = mask | torch.tril(ones, diagonal=shift - window)
    return mask
