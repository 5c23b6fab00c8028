"""simple_self_attention: port of karpathy/nanoGPT model.py CausalSelfAttention.forward manual path with q = k = v = x (att = x @ xᵀ, softmax over the keys, att @ x, unscaled as in lesson 01; its softmax and scores beside it)"""
import torch


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isneginf(m), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s == 0, torch.ones_like(s), s)


def attention_scores(inputs):
    return inputs @ inputs.transpose(-2, -1)


def simple_self_attention(inputs):
    att = attention_scores(inputs)
    att = softmax(att, dim=-1)
    return att @ inputs
