"""sliding_window_mask: HF transformers passes window_size=(sliding_window, sliding_window) to flash-attn's local mask, so each query sees window + 1 keys (https://github.com/huggingface/transformers/issues/39408)"""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    row = torch.arange(num_queries, device=device)[:, None] + q_start - k_start
    col = torch.arange(num_keys, device=device)[None, :]
    if window is None:
        return col > row
    left = window  # the bug: should be window - 1
    return (col > row) | (col < row - left)
