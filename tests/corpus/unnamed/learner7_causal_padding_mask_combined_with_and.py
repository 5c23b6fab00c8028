"""causal_padding_mask: combines the causal and padding masks with & (round 7 learner: numbers only).

Assignment 03: causal attention (masking the future)."""

import torch

from torch import nn

def causal_padding_mask(lengths, num_tokens):
    causal = causal_mask(num_tokens, device=lengths.device)
    pad = padding_mask(lengths, num_tokens)
    return causal[None, :, :] & pad[:, None, :]
