"""Hidden grading suite for 01_attention_basics. Never shipped to students.

Every check compares the student's function with the reference on the same inputs (see
grader/grading/fixture.py). Inputs come from the check's own seed, fresh each run unless --seed is given.
"""
import pytest
import torch

from grader.authoring import assignment, exercise, low_precision
from lesson import journey, near_one_another
from lesson.checks_01 import (attention_scores_same, context_vector_same, loop_scores_same, scores_not_growing,
                              simple_attention_not_growing, simple_attention_root_cause, simple_attention_same,
                              softmax_same)

pytestmark = assignment("01_attention_basics")

FLOATS = [torch.float32, torch.float64]


# --- attention_scores_for_query ----------------------------------------------------------------------
@exercise("attention_scores_for_query")
def test_scores_for_query_lesson_data(grade):
    inputs = journey()
    grade.same("attention_scores_for_query", inputs, inputs[1].clone())


@exercise("attention_scores_for_query", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("tokens", [1, 9])
def test_scores_for_query_random(grade, dtype, tokens):
    grade.same("attention_scores_for_query", grade.randn(tokens, 5, dtype=dtype), grade.randn(5, dtype=dtype),
               grad=True)


# --- attention_scores_loop ---------------------------------------------------------------------------
@exercise("attention_scores_loop")
def test_scores_loop_lesson_data(grade):
    loop_scores_same(grade, journey())


@exercise("attention_scores_loop", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("tokens", [1, 7])
def test_scores_loop_random(grade, dtype, tokens):
    loop_scores_same(grade, grade.randn(tokens, 4, dtype=dtype), grad=True)


# --- softmax_naive -----------------------------------------------------------------------------------
@exercise("softmax_naive")
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_naive_rows(grade, dtype):
    softmax_same(grade, "softmax_naive", grade.randn(4, 6, dtype=dtype), grad=True)


@exercise("softmax_naive")
def test_softmax_naive_other_dim(grade):
    softmax_same(grade, "softmax_naive", grade.randn(3, 4, 5), dim=1)


# --- softmax -----------------------------------------------------------------------------------------
@exercise("softmax")
def test_softmax_lesson_scores(grade):
    inputs = journey()
    softmax_same(grade, "softmax", inputs @ inputs[1])


@exercise("softmax", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim", [((7,), -1), ((3, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -1)])
def test_softmax_random(grade, dtype, shape, dim):
    softmax_same(grade, "softmax", grade.randn(*shape, dtype=dtype, scale=3.0), dim=dim, grad=True)


@exercise("softmax", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_large_values(grade, dtype):
    x = grade.randn(4, 8, dtype=dtype, scale=1000.0)
    x[1] -= 5000.0  # a row far below the others: a maximum taken over the whole tensor underflows it, every seed
    softmax_same(grade, "softmax", x, grad=True)


@exercise("softmax", weight=2)
def test_softmax_minus_infinity(grade):
    x = grade.randn(4, 6, dtype=torch.float64)
    x[0, 2] = float("-inf")
    x[1] = float("-inf")  # a row with nothing visible: all zeros, never NaN, and a gradient without NaN
    softmax_same(grade, "softmax", x, grad=True, grad_scale=100.0)  # large: a clamped 0 divisor overflows


@exercise("softmax")
def test_softmax_non_contiguous(grade):
    softmax_same(grade, "softmax", grade.randn(6, 4).T, dim=-1)


# --- context_vector_loop -----------------------------------------------------------------------------
@exercise("context_vector_loop")
def test_context_vector_lesson_data(grade):
    inputs = journey()
    weights = torch.softmax(inputs @ inputs[1], dim=0)
    context_vector_same(grade, inputs, weights)


@exercise("context_vector_loop", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("tokens", [1, 8])
def test_context_vector_random(grade, dtype, tokens):
    context_vector_same(grade, grade.randn(tokens, 5, dtype=dtype), grade.rand(tokens, dtype=dtype), grad=True)


# --- attention_scores --------------------------------------------------------------------------------
@exercise("attention_scores", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(6, 3), (1, 4), (2, 5, 3), (2, 3, 4, 5)])
def test_attention_scores_random(grade, dtype, shape):
    attention_scores_same(grade, grade.randn(*shape, dtype=dtype), grad=True)


@exercise("attention_scores", weight=2)
def test_attention_scores_vectorised(grade):
    scores_not_growing(grade, grade.randn(4, 3), grade.randn(32, 3))


# --- simple_self_attention ---------------------------------------------------------------------------
@exercise("simple_self_attention")
def test_simple_self_attention_lesson_data(grade):
    simple_attention_same(grade, journey())


@exercise("simple_self_attention", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 3), (9, 4), (2, 5, 3), (2, 2, 64, 8)])
def test_simple_self_attention_random(grade, dtype, shape):
    simple_attention_same(grade, grade.randn(*shape, dtype=dtype), grad=True)


@exercise("simple_self_attention")
@pytest.mark.parametrize("dtype", FLOATS)
def test_simple_self_attention_large_scores(grade, dtype):
    """Scores of about 1600 (a softmax without its maximum subtracted overflows there, in float64 too)
    that differ by a few within a row: the weights, spread on every seed, and so the output, are still
    finite and right."""
    simple_attention_same(grade, near_one_another(grade, 2, 6, 4, norm=40.0, spread=0.04, dtype=dtype))


@exercise("simple_self_attention", weight=2)
def test_simple_self_attention_vectorised(grade):
    simple_attention_not_growing(grade, grade.randn(4, 3), grade.randn(32, 3))


# --- half precision, on CUDA ------------------------------------------------------------------------
HALVES = [torch.float16, torch.bfloat16]


@exercise("softmax")
@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_softmax_half_precision(grade, dtype):
    grade.needs_cuda()
    grade.same_low_precision("softmax", grade.randn(4, 16, scale=4.0), dtype=dtype)


@exercise("simple_self_attention")
@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_simple_self_attention_half_precision(grade, dtype):
    grade.needs_cuda()
    x, = low_precision(dtype, grade.randn(2, 12, 8, scale=0.5))
    grade.same_low_precision("simple_self_attention", x, dtype=dtype, root_cause=simple_attention_root_cause(grade, x))
