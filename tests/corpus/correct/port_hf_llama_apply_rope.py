"""apply_rope: port of huggingface/transformers models/llama/modeling_llama.py rotate_half and apply_rotary_pos_emb (x * cos + rotate_half(x) * sin, the tables cast to x's dtype)"""
import torch


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, cos, sin, offset=0):
    T = x.shape[-2]
    # LlamaRotaryEmbedding.forward returns cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)
    cos = cos[offset:offset + T].to(dtype=x.dtype, device=x.device)
    sin = sin[offset:offset + T].to(dtype=x.dtype, device=x.device)
    return (x * cos) + (rotate_half(x) * sin)
