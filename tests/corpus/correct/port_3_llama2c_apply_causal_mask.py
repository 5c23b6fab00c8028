"""apply_causal_mask ported from karpathy/llama2.c model.py Attention (the additive -inf mask buffer).

Source: https://github.com/karpathy/llama2.c/blob/master/model.py (Attention.__init__ / forward manual path)
Kept: mask = triu(full((1, 1, max_seq_len, max_seq_len), -inf), diagonal=1); scores + mask[:, :, :seqlen, :seqlen].
Adapted: the mask is built for the scores' own T (no module to hold a max_seq_len buffer) and without the two
leading singleton dims so that it broadcasts over any leading dims.
"""
import torch


def apply_causal_mask(scores):
    seqlen = scores.shape[-1]
    mask = torch.full((seqlen, seqlen), float("-inf"), dtype=scores.dtype, device=scores.device)
    mask = torch.triu(mask, diagonal=1)
    return scores + mask[:seqlen, :seqlen]
