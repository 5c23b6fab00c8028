"""apply_rope: meta-llama's apply_rotary_emb (view_as_complex of adjacent pairs) used with half-split tables: rotates (x[2i], x[2i+1]) where the two halves are paired (https://github.com/huggingface/transformers/issues/25199)"""
import torch


def apply_rope(x, cos, sin, offset=0):
    T, hd = x.shape[-2], x.shape[-1]
    # Meta's freqs_cis has one angle per pair: take the first half of the book's tables
    c = cos[offset:offset + T, : hd // 2].float()
    s = sin[offset:offset + T, : hd // 2].float()
    freqs_cis = torch.complex(c, s)
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_ * freqs_cis).flatten(-2).type_as(x)
