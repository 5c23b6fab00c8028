"""sliding_window_mask: the window test is linds <= rinds + window_size, so each query sees window + 1 keys
(window-off-by-one).

Source: ml-explore/mlx-lm mlx_lm/models/base.py create_causal_mask before the fix.
Bug report / fix: https://github.com/ml-explore/mlx-lm/pull/390 "fix window attention mask" ("The window attention
mask had one too many values"; now linds < rinds + window_size).
Port: mx -> torch, queries at q_start, keys at k_start, negated for the course's hidden-mask convention.
"""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    rinds = torch.arange(k_start, k_start + num_keys, device=device)
    linds = torch.arange(q_start, q_start + num_queries, device=device)
    linds = linds[:, None]
    rinds = rinds[None]
    mask = linds >= rinds
    if window is not None:
        mask = mask & (linds <= rinds + window)
    return ~mask
