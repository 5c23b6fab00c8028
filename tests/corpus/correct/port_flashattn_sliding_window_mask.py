"""sliding_window_mask: port of Dao-AILab/flash-attention tests/test_flash_attn.py construct_local_mask (col > row + right or col < row - left with window_size=(window - 1, 0), absolute positions in place of the bottom-right offset)"""
import torch


def sliding_window_mask(num_queries, num_keys, window, q_start=0, k_start=0, device=None):
    row_idx = torch.arange(num_queries, device=device, dtype=torch.long).view(-1, 1)
    col_idx = torch.arange(num_keys, device=device, dtype=torch.long)
    # key index of each query's own position (flash-attn: row + sk - sq)
    diag = row_idx + q_start - k_start
    window_size = (-1, 0) if window is None else (window - 1, 0)
    if window_size[0] < 0:
        return col_idx > diag + window_size[1]
    return torch.logical_or(col_idx > diag + window_size[1], col_idx < diag - window_size[0])
