"""attention_scores: used inputs.T, which reverses all dims and breaks for batched [..., T, d] inputs."""
import torch


def attention_scores(inputs):
    return inputs @ inputs.T
