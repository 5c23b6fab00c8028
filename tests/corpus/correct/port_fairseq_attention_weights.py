"""attention_weights: port of facebookresearch/fairseq fairseq/modules/multihead_attention.py MultiheadAttention.forward (q scaled before q @ kᵀ, masked_fill -inf, the float32 softmax promoted and never demoted, rows with every key hidden zeroed)"""
import torch


def attention_weights(queries, keys, mask=None):
    scaling = queries.shape[-1] ** -0.5
    q = queries * scaling  # fairseq scales q before the product
    attn_weights = torch.matmul(q, keys.transpose(-2, -1))
    if mask is not None:
        mask = torch.broadcast_to(mask, attn_weights.shape)
        attn_weights = attn_weights.masked_fill(mask, float("-inf"))
        # contract: rows with every key hidden give zeros (fairseq would return NaN there)
        dead = mask.all(dim=-1, keepdim=True)
        attn_weights = attn_weights.masked_fill(dead, 0.0)
    # fairseq's utils.softmax computes in float32; keep float64 in float64 (promote, never demote)
    w = torch.softmax(attn_weights.to(torch.promote_types(attn_weights.dtype, torch.float32)), dim=-1)
    w = w.to(attn_weights.dtype)
    if mask is not None:
        w = w.masked_fill(dead, 0.0)
    return w
