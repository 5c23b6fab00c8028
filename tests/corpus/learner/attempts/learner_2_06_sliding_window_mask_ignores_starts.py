"""sliding_window_mask: (deliberate) Compared row/column numbers, ignoring q_start and k_start."""
import torch
from torch import nn


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    """True (hidden) where key position k_start+j is after query position q_start+i, or ``window`` or
    more tokens before it: each query sees itself and the window-1 tokens before it (window None:
    every earlier token).

    -> bool [num_queries, num_keys]. Lesson section 2, "A KV cache" (the window: section 4).
    """
    q = torch.arange(num_queries, device=device)[:, None]
    k = torch.arange(num_keys, device=device)[None, :]
    hidden = k > q
    if window is not None:
        hidden = hidden | (k <= q - window)
    return hidden
