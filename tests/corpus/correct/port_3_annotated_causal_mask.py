"""causal_mask ported from harvardnlp/annotated-transformer (The Annotated Transformer) subsequent_mask.

Source: https://github.com/harvardnlp/annotated-transformer/blob/master/the_annotated_transformer.py (subsequent_mask)
Kept: attn_shape = (1, size, size); triu(ones(attn_shape), diagonal=1).type(torch.uint8); "== 0" gives the
positions that may be attended.
Adapted: the leading 1 dropped and the result negated (the course's mask is True where hidden); device argument.
"""
import torch


def causal_mask(num_tokens, device=None):
    "Mask out subsequent positions."
    attn_shape = (1, num_tokens, num_tokens)
    subsequent_mask = torch.triu(torch.ones(attn_shape, device=device), diagonal=1).type(torch.uint8)
    return ~(subsequent_mask == 0)[0]
