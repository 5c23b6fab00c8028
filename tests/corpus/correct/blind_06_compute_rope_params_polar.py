"""compute_rope_params: Meta's precompute_freqs_cis (torch.polar) turned into half-layout cos/sin tables."""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096):
    if head_dim % 2 != 0:
        raise ValueError("odd head_dim")
    freqs = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2)[: (head_dim // 2)].float() / head_dim))
    t = torch.arange(context_length, device=freqs.device, dtype=torch.float32)
    freqs = torch.outer(t, freqs).float()
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64
    cos = torch.cat([freqs_cis.real, freqs_cis.real], dim=-1)
    sin = torch.cat([freqs_cis.imag, freqs_cis.imag], dim=-1)
    return cos.contiguous(), sin.contiguous()
