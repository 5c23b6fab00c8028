"""attention_scores: inputs @ inputs.transpose(-2, -1)"""
import torch


def attention_scores(inputs):
    return inputs @ inputs.transpose(-2, -1)
