"""causal_mask: port of facebookresearch/fairseq fairseq/models/transformer TransformerDecoder.buffered_future_mask (triu of -inf with diagonal 1, read back as a boolean mask with isinf)"""
import torch


def causal_mask(num_tokens, device=None):
    # buffered_future_mask: torch.triu(fill_with_neg_inf(zeros(dim, dim)), 1); hidden where -inf
    future = torch.triu(torch.full((num_tokens, num_tokens), float("-inf"), device=device), 1)
    return torch.isinf(future)
