"""compute_rope_params: the cos/sin tables are cached in bfloat16 (.bfloat16()), losing precision, instead of float32
(wrong-dtype / precision).

Source: https://github.com/KellerJordan/modded-nanogpt train_gpt2.py Rotary (self.cos_cached = freqs.cos().bfloat16())
Bug report: https://github.com/KellerJordan/modded-nanogpt/issues/39 "RoPE has precision errors when used with
BFloat16" (same bug class: https://github.com/huggingface/transformers/pull/29285).
Port: inv_freq = 1 / base ** (arange(0, dim, 2).float() / dim); t = arange(seq_len); freqs = outer(t, inv_freq);
the halves repeated as the course lays them out; cos/sin cached as bfloat16.
"""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096):
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    t = torch.arange(context_length).type_as(inv_freq)
    freqs = torch.outer(t, inv_freq)
    freqs = torch.cat([freqs, freqs], dim=-1)
    cos_cached = freqs.cos().bfloat16()
    sin_cached = freqs.sin().bfloat16()
    return cos_cached, sin_cached
