"""causal_mask ported from openai/gpt-2 src/model.py attention_mask(nd, ns) (TensorFlow -> PyTorch).

Source: https://github.com/openai/gpt-2/blob/master/src/model.py (attention_mask)
Kept: i = range(nd)[:, None]; j = range(ns); m = i >= j - ns + nd ("1's in the lower triangle, counting from the
lower right corner"), with nd = ns = num_tokens.
Adapted: tf -> torch; GPT-2's m is "may attend", so the course's hidden mask is its negation, kept boolean.
"""
import torch


def _gpt2_attention_mask(nd, ns, *, dtype, device=None):
    """1's in the lower triangle, counting from the lower right corner."""
    i = torch.arange(nd, device=device)[:, None]
    j = torch.arange(ns, device=device)
    m = i >= j - ns + nd
    return m.to(dtype)


def causal_mask(num_tokens, device=None):
    return ~_gpt2_attention_mask(num_tokens, num_tokens, dtype=torch.bool, device=device)
