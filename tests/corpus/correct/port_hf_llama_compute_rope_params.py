"""compute_rope_params: port of huggingface/transformers models/llama/modeling_llama.py LlamaRotaryEmbedding (default inv_freq, outer product with the positions, cat((freqs, freqs)), cos and sin)"""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, dtype=torch.float32):
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    position_ids = torch.arange(context_length).float()
    freqs = (inv_freq[:, None] @ position_ids[None, :]).transpose(0, 1)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()
