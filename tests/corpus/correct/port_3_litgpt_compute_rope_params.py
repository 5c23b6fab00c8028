"""compute_rope_params ported from Lightning-AI/litgpt litgpt/model.py build_rope_cache (no extra_config).

Source: https://github.com/Lightning-AI/litgpt/blob/26857050fe3ff627cd714fe92f5838f51a3d5efa/litgpt/model.py#L939
Kept: theta = 1 / base ** (arange(0, n_elem, 2).float() / n_elem); seq_idx = arange(seq_len).float() / condense_ratio;
idx_theta = outer(seq_idx, theta).repeat(1, 2); cos/sin times attention_scaling (1.0).
Adapted: course argument names; the odd head_dim error the contract asks for (litgpt trims instead).
"""
import torch


def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, device=None, condense_ratio=1):
    if head_dim % 2 != 0:
        raise ValueError("head_dim must be even")
    n_elem, base, seq_len = head_dim, theta_base, context_length
    # Compute the inverse frequencies theta
    theta = 1.0 / (base ** (torch.arange(0, n_elem, 2, device=device).float() / n_elem))

    # Initialize attention scaling factor (modified for YaRN)
    attention_scaling = 1.0

    # Create position indices `[0, 1, ..., seq_len - 1]`
    seq_idx = torch.arange(seq_len, device=device).float() / condense_ratio

    # Calculate the product of position index and $\theta_i$
    idx_theta = torch.outer(seq_idx, theta).repeat(1, 2)
    if idx_theta.shape[-1] > n_elem > 1:
        idx_theta = idx_theta[..., :n_elem]

    cos = torch.cos(idx_theta) * attention_scaling
    sin = torch.sin(idx_theta) * attention_scaling
    return cos, sin
