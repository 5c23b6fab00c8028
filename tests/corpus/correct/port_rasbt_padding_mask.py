"""padding_mask: port of rasbt/LLMs-from-scratch ch03/01_main-chapter-code/ch03.ipynb masking, extended to padding (arange(max_len)[None] >= lengths[:, None])"""
import torch


def padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device)[None, :] >= lengths[:, None]
