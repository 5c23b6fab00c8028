"""sliding_window_mask: query positions from 0, q_start ignored (round 7 learner: numbers only).

Assignment 06: decoding attention, the attention of fast generation.

Lesson: the notebook ``decoding_attention.ipynb`` beside this file. A decoder generates one token at
a time; each new token attends to every earlier one. Three ideas make that cheap: a KV cache (keys
and values of earlier tokens computed once and kept), grouped-query attention (several query heads
share one key/value head, so the cache is smaller) and sliding-window attention (each token sees only
the last few, so the cache stops growing). Rotary positions (RoPE) tell attention where tokens are by
rotating queries and keys, which works at any position a cached call starts from.

Shapes: B batch, T tokens, H query heads, G key/value groups, hd = d_out / H features per head.
Masks are boolean and True means hidden.
"""

import torch

from torch import nn

def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    qpos = torch.arange(num_queries, device=device)[:, None]
    kpos = torch.arange(k_start, k_start + num_keys, device=device)[None, :]
    hidden = kpos > qpos
    if window is not None:
        hidden = hidden | (kpos <= qpos - window)
    return hidden
