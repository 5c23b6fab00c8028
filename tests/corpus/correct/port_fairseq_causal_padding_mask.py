"""causal_padding_mask: port of facebookresearch/fairseq MultiheadAttention's attn_mask and key_padding_mask applied together (buffered_future_mask | lengths_to_padding_mask[:, None], fairseq's helpers beside it)"""
import torch


def causal_mask(num_tokens, device=None):
    # buffered_future_mask: torch.triu(fill_with_neg_inf(zeros(dim, dim)), 1); hidden where -inf
    future = torch.triu(torch.full((num_tokens, num_tokens), float("-inf"), device=device), 1)
    return torch.isinf(future)


def padding_mask(lengths, max_len):
    bsz = lengths.size(0)
    mask = torch.arange(max_len).to(lengths.device).view(1, max_len)
    mask = mask.expand(bsz, -1) >= lengths.view(bsz, 1).expand(-1, max_len)
    return mask


def causal_padding_mask(lengths, num_tokens):
    # fairseq applies attn_mask (future) and key_padding_mask (unsqueeze(1).unsqueeze(2)) one after the other
    future = causal_mask(num_tokens, lengths.device).unsqueeze(0)
    return future | padding_mask(lengths, num_tokens).unsqueeze(1)
