"""The second course's hidden suite for 01_normalisation: every check compares the student's function with
the reference on inputs drawn from the check's own seed; it imports nothing of the grader but
grader.authoring, and nothing of the attention course."""
import math

import pytest
import torch

from grader.authoring import Mistake, assignment, exercise

pytestmark = assignment("01_normalisation")

FLOATS = [torch.float32, torch.float64]


def unbiased_layer_norm(x, weight, bias, eps=1e-5):
    """The mistake: the variance divided by n - 1."""
    x64 = x.double()
    mean = x64.mean(dim=-1, keepdim=True)
    var = x64.var(dim=-1, keepdim=True)
    return ((x64 - mean) / torch.sqrt(var + eps) * weight.double() + bias.double()).to(x.dtype)


def tanh_gelu(x):
    """The mistake: GELU's tanh approximation."""
    x64 = x.double()
    return (0.5 * x64 * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))).to(x.dtype)


@exercise("layer_norm", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3, 5, 8), (1, 16)], ids=["batched", "one-row"])
def test_layer_norm_random(grade, dtype, shape):
    x = grade.randn(*shape, dtype=dtype)
    weight, bias = grade.randn(shape[-1], dtype=dtype), grade.randn(shape[-1], dtype=dtype)
    grade.same("layer_norm", x, weight, bias, grad=True, mistakes=[
        Mistake("variance-unbiased", "your variance divides by n - 1", lambda: unbiased_layer_norm(x, weight, bias))])


@exercise("layer_norm")
def test_layer_norm_is_vectorised(grade):
    short = grade.measured("layer_norm", grade.randn(2, 8), grade.randn(8), grade.randn(8)).ops
    long = grade.measured("layer_norm", grade.randn(64, 8), grade.randn(8), grade.randn(8)).ops
    grade.expect_not_growing("layer_norm", short, long, cases=("on 2 rows", "on 64 rows"),
                             hint="it loops over rows in Python; work on the whole tensor")


@exercise("gelu", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
def test_gelu_random(grade, dtype):
    x = grade.randn(4, 7, dtype=dtype, scale=3.0)
    grade.same("gelu", x, grad=True, mistakes=[
        Mistake("gelu-tanh-approximation", "your GELU is the tanh approximation", lambda: tanh_gelu(x))])
