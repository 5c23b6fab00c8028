"""renormalize_causal_weights: zeroed the future then applied softmax again to renormalise, so the zeroed future gets exp(0) weight and the past is distorted."""
import torch


def renormalize_causal_weights(weights):
    mask = causal_mask(weights.shape[-1], device=weights.device)
    w = weights.masked_fill(mask, 0.0)
    return torch.softmax(w, dim=-1)
