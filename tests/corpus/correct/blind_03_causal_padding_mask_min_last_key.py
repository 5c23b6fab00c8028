"""causal_padding_mask: Hidden where key j > min(i, lengths[b] - 1), the last key query i may see (written blind, from the contract alone)."""
import torch


def causal_padding_mask(lengths, num_tokens):
    # query i of sequence b sees keys 0 .. min(i, lengths[b] - 1)
    pos = torch.arange(num_tokens, device=lengths.device)
    last_visible = torch.minimum(pos[None, :, None], lengths[:, None, None].to(pos.dtype) - 1)  # [B, T, 1]
    return pos[None, None, :] > last_visible
