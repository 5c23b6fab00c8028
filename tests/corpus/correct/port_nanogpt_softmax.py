"""softmax: port of karpathy/nanoGPT model.py CausalSelfAttention's softmax(att, dim=-1), written out (max shift with an all -inf slice's max taken as 0, a zero sum guarded)"""
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s == 0, torch.ones_like(s), s)
