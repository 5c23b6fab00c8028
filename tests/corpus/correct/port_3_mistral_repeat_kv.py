"""repeat_kv ported from mistralai/mistral-inference one_file_ref.py repeat_kv.

Source: https://github.com/mistralai/mistral-inference/blob/26a52a1/one_file_ref.py (repeat_kv)
Kept: torch.repeat_interleave(keys, repeats=repeats, dim=...).
Adapted: one tensor at a time, and the head axis is dim 1 of the course's [B, G, T, hd] (Mistral keeps
[B, T, G, hd] and repeats dim 2).
"""
import torch


def repeat_kv(x: torch.Tensor, group_size: int) -> torch.Tensor:
    return torch.repeat_interleave(x, repeats=group_size, dim=1)
