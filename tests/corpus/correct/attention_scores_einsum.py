"""attention_scores: einsum over the feature axis."""
import torch


def attention_scores(inputs):
    return torch.einsum("...id,...jd->...ij", inputs, inputs)
