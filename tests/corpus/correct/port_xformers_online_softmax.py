"""online_softmax: port of facebookresearch/xformers tests/test_splitk_reference.py ref_attention_splitk's split-k reduction (per-slice row max and sum of exp merged with alpha = exp(-|local_max - global_max|), nan_to_num(1.0), pick_new) as a one-pass online softmax"""
import torch


def online_softmax(x, block_size):
    gmax = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=x.dtype, device=x.device)
    gsum = torch.zeros(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device)
    for start in range(0, x.shape[-1], block_size):
        blk = x[..., start:start + block_size]
        local_max = torch.max(blk, dim=-1, keepdim=True).values.detach()
        scaled = blk - local_max
        scaled = torch.where(scaled.isnan(), torch.full_like(scaled, float("-inf")), scaled)
        local_sum = torch.exp(scaled).sum(-1, keepdim=True)
        alpha = torch.exp(-torch.abs(local_max - gmax)).nan_to_num(1.0)
        pick_new = local_max < gmax
        new_coef = torch.where(pick_new, alpha, torch.ones_like(alpha))
        curr_coef = torch.where(pick_new, torch.ones_like(alpha), alpha)
        gsum = gsum * curr_coef + local_sum * new_coef
        gmax = torch.maximum(local_max, gmax)
    shift = _shift(gmax)
    gsum = torch.where(gsum == 0, torch.ones_like(gsum), gsum)
    return torch.exp(x - shift) / gsum
