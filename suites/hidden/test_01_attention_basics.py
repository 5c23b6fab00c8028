"""Hidden grading suite for 01_attention_basics. Never shipped to students.

Every check compares the student's function with the reference on the same inputs (see
grader/harness.py). Inputs come from the check's own seed, fresh each run unless --seed is given.
"""
import pytest
import torch

from grader import diagnose
from grader.authoring import Mistake, assignment, exercise
from lesson import journey, mistaken

pytestmark = assignment("01_attention_basics")

FLOATS = [torch.float32, torch.float64]


# --- naming the mistake ------------------------------------------------------------------------------
def softmax_same(grade, name, x, dim=None, grad=False):
    """``name`` (softmax or softmax_naive) matches the reference; if not, name the mistake: inf or NaN
    where the right answer is finite, or a softmax along another dimension."""
    kwargs = {} if dim is None else {"dim": dim}
    dim = -1 if dim is None else dim
    right = mistaken.safe_softmax(x, dim)
    explain = (lambda out: diagnose.UNSTABLE if diagnose.unstable(out, right) else None) if name == "softmax" else None
    grade.same(name, x, grad=grad, mistakes=mistaken.softmax_mistakes(x, dim), explain=explain, right=right,
               normalised_exponential=name == "softmax", **kwargs)


def simple_attention_root_cause(grade, x):
    """The student's own softmax or attention_scores, when simple_self_attention(x) is right given it."""
    scores = x @ x.transpose(-2, -1)
    weights = mistaken.safe_softmax(scores)

    def root_cause(failure, out):
        return diagnose.blame(grade, failure, out, "softmax", diagnose.their(grade, "softmax", scores, dim=-1),
                              weights, lambda w: w @ x, mistaken.softmax_mistakes(scores, -1),
                              chain=((x,), lambda x: x @ x.transpose(-2, -1), lambda w, x: w @ x, {"dim": -1})) or \
            diagnose.blame(grade, failure, out, "attention_scores", diagnose.their(grade, "attention_scores", x),
                           scores, lambda s: mistaken.safe_softmax(s) @ x,
                           chain=((x,), lambda x: x, lambda s, x: mistaken.safe_softmax(s) @ x, {}))
    return root_cause


def simple_attention_same(grade, x, grad=False):
    """simple_self_attention matches the reference; if not, say whether the student's own softmax or
    attention_scores is to blame (the root cause), or which mistake of its own explains the output."""
    scores = x @ x.transpose(-2, -1)
    weights = mistaken.safe_softmax(scores)
    root_cause = simple_attention_root_cause(grade, x)

    grade.same("simple_self_attention", x, grad=grad, right=lambda: weights @ x, root_cause=root_cause,
               explain=lambda out: diagnose.UNSTABLE if diagnose.unstable(out, weights @ x) else None, mistakes=[
        *(Mistake(m, what, lambda wrong=wrong: wrong() @ x) for m, what, wrong in mistaken.softmax_mistakes(scores, -1)),
        Mistake("values-not-used", "your output is the attention weights: multiply them by the inputs", weights),
        Mistake("wrong-scale", "your scores are scaled by 1/sqrt(d); the simplified attention of this lesson is "
                               "unscaled", lambda: mistaken.safe_softmax(scores / x.shape[-1] ** 0.5) @ x)])


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
    grade.same("attention_scores_loop", journey())


@exercise("attention_scores_loop", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("tokens", [1, 7])
def test_scores_loop_random(grade, dtype, tokens):
    grade.same("attention_scores_loop", grade.randn(tokens, 4, dtype=dtype), grad=True)


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
    softmax_same(grade, "softmax", grade.randn(4, 8, dtype=dtype, scale=1000.0), grad=True)


@exercise("softmax", weight=2)
def test_softmax_minus_infinity(grade):
    x = grade.randn(4, 6, dtype=torch.float64)
    x[0, 2] = float("-inf")
    x[1] = float("-inf")  # a row with nothing visible: all zeros, never NaN, and a gradient without NaN
    softmax_same(grade, "softmax", x, grad=True)


@exercise("softmax")
def test_softmax_non_contiguous(grade):
    softmax_same(grade, "softmax", grade.randn(6, 4).T, dim=-1)


# --- context_vector_loop -----------------------------------------------------------------------------
@exercise("context_vector_loop")
def test_context_vector_lesson_data(grade):
    inputs = journey()
    weights = torch.softmax(inputs @ inputs[1], dim=0)
    grade.same("context_vector_loop", inputs, weights)


@exercise("context_vector_loop", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("tokens", [1, 8])
def test_context_vector_random(grade, dtype, tokens):
    grade.same("context_vector_loop", grade.randn(tokens, 5, dtype=dtype), grade.rand(tokens, dtype=dtype), grad=True)


# --- attention_scores --------------------------------------------------------------------------------
@exercise("attention_scores", weight=2)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(6, 3), (1, 4), (2, 5, 3), (2, 3, 4, 5)])
def test_attention_scores_random(grade, dtype, shape):
    grade.same("attention_scores", grade.randn(*shape, dtype=dtype), grad=True)


@exercise("attention_scores", weight=2)
def test_attention_scores_vectorised(grade):
    short = grade.measured("attention_scores", grade.randn(4, 3)).ops
    long = grade.measured("attention_scores", grade.randn(32, 3)).ops
    grade.expect_not_growing("attention_scores", short, long)


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
    """Scores in the hundreds (a softmax without its maximum subtracted overflows there): the weights,
    and so the output, are still finite and right."""
    simple_attention_same(grade, grade.randn(2, 6, 4, dtype=dtype, scale=8.0))


@exercise("simple_self_attention", weight=2)
def test_simple_self_attention_vectorised(grade):
    x_short, x_long = grade.randn(4, 3), grade.randn(32, 3)
    short = grade.measured("simple_self_attention", x_short,
                           root_cause=simple_attention_root_cause(grade, x_short)).ops
    long = grade.measured("simple_self_attention", x_long, root_cause=simple_attention_root_cause(grade, x_long)).ops
    grade.expect_not_growing("simple_self_attention", short, long, helpers=[
        ("attention_scores", (x_short,), (x_long,)),
        ("softmax", (x_short @ x_short.T, -1), (x_long @ x_long.T, -1))])


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
    grade.same_low_precision("simple_self_attention", grade.randn(2, 12, 8, scale=0.5), dtype=dtype)
