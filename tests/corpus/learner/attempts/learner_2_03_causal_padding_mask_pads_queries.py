"""causal_padding_mask: (deliberate) Broadcast the padding mask as [B, T, 1]: hides padded queries (rows) instead of padded keys (columns)."""
import torch


def causal_padding_mask(lengths, num_tokens):
    causal = causal_mask(num_tokens, device=lengths.device)
    return causal[None, :, :] | padding_mask(lengths, num_tokens)[:, :, None]
