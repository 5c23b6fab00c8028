"""The second course's public suite for 01_normalisation: what students run with `grade check`, replayed
from the reference's recorded outputs in their distribution."""
import math

import torch

from grader.authoring import Mistake, assignment, exercise

pytestmark = assignment("01_normalisation")


@exercise("layer_norm")
def test_layer_norm_on_two_rows(grade):
    x, weight, bias = grade.randn(2, 6), grade.randn(6), grade.randn(6)
    unbiased = ((x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + 1e-5)) * weight + bias
    grade.same("layer_norm", x, weight, bias, grad=True,
               mistakes=[Mistake("variance-unbiased", "your variance divides by n - 1", unbiased)])


@exercise("gelu")
def test_gelu_on_a_row(grade):
    x = grade.randn(9, scale=3.0)
    tanh = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    grade.same("gelu", x, grad=True,
               mistakes=[Mistake("gelu-tanh-approximation", "your GELU is the tanh approximation", tanh)])
