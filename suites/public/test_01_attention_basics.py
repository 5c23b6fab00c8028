"""Public checks for 01_attention_basics: the lesson's data and fixed random cases.

`grade check` runs them in your copy of the course against reference outputs recorded when the
course was released (``reference.pt`` beside this file), so it works offline. They check what the
course's own grading checks (the lesson's data, one token, batches, both float dtypes, large and
-inf scores, gradients, vectorised code), with the same weights and the same feedback, on other
shapes: the course's grading draws fresh random inputs, so passing here is a strong sign, not a proof.
"""
import pytest
import torch

from grader.authoring import assignment, exercise
from lesson import checks_01 as checks
from lesson import journey, near_one_another, projected

pytestmark = assignment("01_attention_basics")

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def by_dtype(*sizes):
    """Every size with both float dtypes: parametrize values and ids."""
    cases = [(size, dtype) for size in sizes for dtype in DTYPES.values()]
    ids = [f"{size}-{name}".replace(" ", "") for size in sizes for name in DTYPES]
    return {"argvalues": cases, "ids": ids}


# --- attention_scores_for_query -----------------------------------------------------------------------
@exercise("attention_scores_for_query")
def test_query_scores_on_the_lesson_data(grade):
    grade.same("attention_scores_for_query", journey(), journey()[1])  # the query "journey"


@exercise("attention_scores_for_query", weight=2)
@pytest.mark.parametrize("tokens,dtype", **by_dtype(1, 6))
def test_query_scores_on_random_data(grade, tokens, dtype):
    inputs, query = grade.randn(tokens, 4, dtype=dtype), grade.randn(4, dtype=dtype)
    grade.same("attention_scores_for_query", inputs, query, grad=True)


# --- attention_scores_loop ----------------------------------------------------------------------------
@exercise("attention_scores_loop")
def test_loop_scores_on_the_lesson_data(grade):
    checks.loop_scores_same(grade, journey())


@exercise("attention_scores_loop", weight=2)
@pytest.mark.parametrize("tokens,dtype", **by_dtype(1, 5))
def test_loop_scores_on_random_data(grade, tokens, dtype):
    checks.loop_scores_same(grade, grade.randn(tokens, 3, dtype=dtype), grad=True)


# --- softmax_naive ------------------------------------------------------------------------------------
@exercise("softmax_naive")
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=list(DTYPES))
def test_naive_softmax_along_the_last_dim(grade, dtype):
    checks.softmax_same(grade, "softmax_naive", grade.randn(3, 5, dtype=dtype), grad=True)


@exercise("softmax_naive")
def test_naive_softmax_along_dim_1(grade):
    checks.softmax_same(grade, "softmax_naive", grade.randn(2, 4, 3), dim=1)


# --- softmax ------------------------------------------------------------------------------------------
@exercise("softmax")
def test_softmax_on_the_lesson_scores(grade):
    inputs = journey()
    checks.softmax_same(grade, "softmax", projected(inputs, inputs[1])[0])  # the weights [0.1385, 0.2379, 0.2333, 0.1240, ...]


@exercise("softmax", weight=2)
@pytest.mark.parametrize("case,dtype", **by_dtype(((6,), -1), ((4, 3), 0), ((3, 2, 5), 1), ((3, 2, 5), -1)))
def test_softmax_on_random_data(grade, case, dtype):
    shape, dim = case
    checks.softmax_same(grade, "softmax", grade.randn(*shape, dtype=dtype, scale=2.5), dim=dim, grad=True)


@exercise("softmax", weight=2)
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=list(DTYPES))
def test_softmax_does_not_overflow(grade, dtype):
    x = grade.randn(3, 7, dtype=dtype, scale=800.0)  # exp(800) is inf
    x[2] -= 4000.0  # a row far below the others: a maximum over the whole tensor underflows it
    checks.softmax_same(grade, "softmax", x, grad=True)


@exercise("softmax", weight=2)
def test_softmax_with_hidden_entries(grade):
    x = grade.randn(5, 4, dtype=torch.float64)
    x[3, 1] = float("-inf")  # weight 0
    x[0] = float("-inf")  # nothing to attend to: zeros, not NaN, and gradients without NaN
    checks.softmax_same(grade, "softmax", x, grad=True, grad_scale=100.0)  # large: a clamped 0 divisor overflows


@exercise("softmax")
def test_softmax_on_a_transposed_input(grade):
    checks.softmax_same(grade, "softmax", grade.randn(5, 3).T, dim=-1)  # [3, 5], not contiguous


# --- context_vector_loop ------------------------------------------------------------------------------
@exercise("context_vector_loop")
def test_context_vector_on_the_lesson_data(grade):
    weights = torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
    checks.context_vector_same(grade, journey(), weights)  # z2, about [0.4419, 0.6515, 0.5683]


@exercise("context_vector_loop", weight=2)
@pytest.mark.parametrize("tokens,dtype", **by_dtype(1, 7))
def test_context_vector_on_random_data(grade, tokens, dtype):
    checks.context_vector_same(grade, grade.randn(tokens, 4, dtype=dtype), grade.rand(tokens, dtype=dtype), grad=True)


# --- attention_scores ---------------------------------------------------------------------------------
@exercise("attention_scores", weight=2)
@pytest.mark.parametrize("shape,dtype", **by_dtype((5, 4), (1, 3), (3, 4, 2), (2, 3, 5, 4)))
def test_scores_on_random_data(grade, shape, dtype):
    checks.attention_scores_same(grade, grade.randn(*shape, dtype=dtype), grad=True)


@exercise("attention_scores", weight=2)
def test_scores_are_vectorised(grade):
    checks.scores_not_growing(grade, grade.randn(3, 4), grade.randn(40, 4))


# --- simple_self_attention ----------------------------------------------------------------------------
@exercise("simple_self_attention")
def test_self_attention_on_the_lesson_data(grade):
    checks.simple_attention_same(grade, journey())


@exercise("simple_self_attention", weight=2)
@pytest.mark.parametrize("shape,dtype", **by_dtype((1, 5), (7, 3), (3, 4, 2), (3, 2, 48, 6)))
def test_self_attention_on_random_data(grade, shape, dtype):
    checks.simple_attention_same(grade, grade.randn(*shape, dtype=dtype), grad=True)


@exercise("simple_self_attention")
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=list(DTYPES))
def test_self_attention_with_large_scores(grade, dtype):
    checks.simple_attention_same(grade, near_one_another(grade, 3, 5, 4, norm=35.0, spread=0.05, dtype=dtype))


@exercise("simple_self_attention", weight=2)
def test_self_attention_is_vectorised(grade):
    checks.simple_attention_not_growing(grade, grade.randn(3, 4), grade.randn(40, 4))
