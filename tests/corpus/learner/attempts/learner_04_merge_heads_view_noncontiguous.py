"""merge_heads: transpose(1, 2) then .view(B, T, -1) without .contiguous()"""
import torch


def merge_heads(x):
    B, H, T, hd = x.shape
    return x.transpose(1, 2).view(B, T, H * hd)
