"""sliding_window_mask ported from ml-explore/mlx-lm mlx_lm/models/base.py create_causal_mask (MLX -> PyTorch).

Source: https://github.com/ml-explore/mlx-lm/blob/0d3ec31943aa2834862dd6ad190ea9eeb3cd680e/mlx_lm/models/base.py
Kept: rinds = arange(offset + N) for keys, linds = arange(offset, offset + N)[:, None] for queries,
mask = linds >= rinds; with a window: mask & (linds < rinds + window_size). (mask = may attend.)
Adapted: mx -> torch; the course gives query and key starts separately (keys start at k_start, queries at
q_start); the result is negated, since the course's mask is True where hidden.
"""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    rinds = torch.arange(k_start, k_start + num_keys, device=device)
    linds = torch.arange(q_start, q_start + num_queries, device=device)
    linds = linds[:, None]
    rinds = rinds[None]
    mask = linds >= rinds
    if window is not None:
        mask = mask & (linds < rinds + window)
    return ~mask
