"""attention_weights: timm's EvaAttention applied the attention mask after the softmax without renormalising, so the rows no longer sum to 1 (https://github.com/huggingface/pytorch-image-models/pull/2236)"""
import torch


def attention_weights(queries, keys, mask=None):
    q = queries * queries.shape[-1] ** -0.5
    attn = (q @ keys.transpose(-2, -1)).softmax(dim=-1)
    if mask is not None:
        attn = attn.masked_fill(mask, 0.0)  # the bug: after the softmax, no renormalisation
    return attn
