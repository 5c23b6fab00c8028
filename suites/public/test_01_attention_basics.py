"""Public checks for 01_attention_basics: the lesson's data and a few fixed random cases.

`grade check` runs them in your copy of the course against reference outputs recorded when the
course was released (``reference.pt`` beside this file), so it works offline. The course's own
grading checks more cases, with fresh random inputs: passing here is a good sign, not a guarantee.
"""
import pytest
import torch

from grader.authoring import assignment, exercise
from grader.diagnose import UNSTABLE, unstable
from lesson import journey
from lesson.mistaken import safe_softmax, softmax_mistakes

pytestmark = assignment("01_attention_basics")



@exercise("attention_scores_for_query")
def test_query_scores_on_the_lesson_data(grade):
    grade.same("attention_scores_for_query", journey(), journey()[1])  # the query "journey"


@exercise("attention_scores_for_query")
@pytest.mark.parametrize("tokens,dtype", [(1, torch.float32), (8, torch.float64)], ids=["T1-float32", "T8-float64"])
def test_query_scores_on_random_data(grade, tokens, dtype):
    grade.same("attention_scores_for_query", grade.randn(tokens, 4, dtype=dtype), grade.randn(4, dtype=dtype),
               grad=True)


@exercise("attention_scores_loop")
def test_loop_scores_on_the_lesson_data(grade):
    grade.same("attention_scores_loop", journey())


@exercise("attention_scores_loop")
@pytest.mark.parametrize("tokens,dtype", [(1, torch.float64), (5, torch.float32)], ids=["T1-float64", "T5-float32"])
def test_loop_scores_on_random_data(grade, tokens, dtype):
    grade.same("attention_scores_loop", grade.randn(tokens, 3, dtype=dtype), grad=True)


@exercise("softmax_naive")
def test_naive_softmax_on_the_lesson_scores(grade):
    inputs = journey()
    grade.same("softmax_naive", inputs @ inputs[1])


@exercise("softmax_naive")
def test_naive_softmax_along_dim_0(grade):
    grade.same("softmax_naive", grade.randn(5, 3, dtype=torch.float64), dim=0, grad=True)


def softmax_same(grade, x, dim=-1, grad=False):
    """The student's softmax matches the reference's; when it does not, name the mistake if a known
    one (the wrong dimension, an overflow) explains the output."""
    grade.same("softmax", x, dim=dim, grad=grad, mistakes=softmax_mistakes(x, dim), normalised_exponential=True,
               explain=lambda out: UNSTABLE if unstable(out, safe_softmax(x, dim)) else None)


@exercise("softmax")
def test_softmax_on_the_lesson_scores(grade):
    inputs = journey()
    softmax_same(grade, inputs @ inputs[1])  # the weights [0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]


@exercise("softmax", weight=2)
@pytest.mark.parametrize("shape,dim,dtype", [((2, 3, 4), 1, torch.float32), ((4, 5), -1, torch.float64)],
                         ids=["dim1-float32", "last-dim-float64"])
def test_softmax_on_random_data(grade, shape, dim, dtype):
    softmax_same(grade, grade.randn(*shape, dtype=dtype, scale=2.0), dim=dim, grad=True)


@exercise("softmax", weight=2)
def test_softmax_does_not_overflow(grade):
    softmax_same(grade, grade.randn(3, 6, scale=500.0))  # exp(500) is inf in float32


@exercise("softmax")
def test_softmax_with_hidden_entries(grade):
    x = grade.randn(3, 5, dtype=torch.float64)
    x[0, 1] = float("-inf")  # weight 0
    x[2] = float("-inf")  # nothing to attend to: zeros, not NaN
    softmax_same(grade, x)


@exercise("context_vector_loop")
def test_context_vector_on_the_lesson_data(grade):
    inputs = journey()
    weights = torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581])
    grade.same("context_vector_loop", inputs, weights)  # z2, about [0.4419, 0.6515, 0.5683]


@exercise("context_vector_loop")
@pytest.mark.parametrize("tokens,dtype", [(1, torch.float32), (7, torch.float64)], ids=["T1-float32", "T7-float64"])
def test_context_vector_on_random_data(grade, tokens, dtype):
    grade.same("context_vector_loop", grade.randn(tokens, 4, dtype=dtype), grade.rand(tokens, dtype=dtype), grad=True)


@exercise("attention_scores")
def test_scores_on_the_lesson_data(grade):
    grade.same("attention_scores", journey())


@exercise("attention_scores")
@pytest.mark.parametrize("shape,dtype", [((3, 4, 5), torch.float64), ((2, 2, 6, 3), torch.float32)],
                         ids=["batch3-float64", "batch2x2-float32"])
def test_scores_on_batches(grade, shape, dtype):
    grade.same("attention_scores", grade.randn(*shape, dtype=dtype), grad=True)


@exercise("attention_scores")
def test_scores_are_vectorised(grade):
    few = grade.measured("attention_scores", grade.randn(3, 4)).ops
    many = grade.measured("attention_scores", grade.randn(40, 4)).ops
    grade.expect_not_growing("attention_scores", few, many)


@exercise("simple_self_attention")
def test_self_attention_on_the_lesson_data(grade):
    grade.same("simple_self_attention", journey())


@exercise("simple_self_attention")
@pytest.mark.parametrize("shape,dtype", [((1, 5), torch.float32), ((2, 7, 4), torch.float64)],
                         ids=["T1-float32", "batch2-float64"])
def test_self_attention_on_random_data(grade, shape, dtype):
    grade.same("simple_self_attention", grade.randn(*shape, dtype=dtype), grad=True)


@exercise("simple_self_attention")
def test_self_attention_on_a_transposed_input(grade):
    grade.same("simple_self_attention", grade.randn(4, 6).T)  # [6, 4], not contiguous


@exercise("simple_self_attention")
def test_self_attention_is_vectorised(grade):
    x_few, x_many = grade.randn(3, 4), grade.randn(40, 4)
    few = grade.measured("simple_self_attention", x_few).ops
    many = grade.measured("simple_self_attention", x_many).ops
    grade.expect_not_growing("simple_self_attention", few, many, helpers=[  # a loop of your own helper's counts there
        ("attention_scores", (x_few,), (x_many,)), ("softmax", (x_few @ x_few.T, -1), (x_many @ x_many.T, -1))])
