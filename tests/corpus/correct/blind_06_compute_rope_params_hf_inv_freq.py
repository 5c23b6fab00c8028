"""compute_rope_params: Hugging Face style inv_freq from an int64 arange, torch.outer, emb = cat(freqs, freqs)."""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096):
    if head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even, got {head_dim}")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    t = torch.arange(context_length, dtype=torch.int64).float()
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()
