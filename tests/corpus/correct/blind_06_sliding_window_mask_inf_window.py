"""sliding_window_mask: signed distance compared with a window of math.inf when window is None."""
import math
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    w = math.inf if window is None else window
    rel = (torch.arange(num_keys, device=device)[None, :] + k_start) - (torch.arange(num_queries, device=device)[:, None] + q_start)
    # rel > 0: future key; -rel >= w: key w or more tokens back
    return ((rel > 0) | (-rel >= w)).to(torch.bool)
