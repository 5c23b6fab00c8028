"""softmax: hands the work to torch."""
import torch


def softmax(x, dim=-1):
    return torch.nn.functional.softmax(x, dim=dim)
