"""Public checks for 02_self_attention: the lesson's data and a few fixed random cases.

Functions are compared with the reference on the same inputs; classes are built on both sides and the
reference's weights loaded into yours by parameter name, so the outputs must agree exactly (within
the dtype's tolerance). `grade check` replays reference outputs recorded at release, offline.
"""
import pytest
import torch

from grader.authoring import assignment, exercise
from lesson import dessert, journey
from lesson.mistaken import attention_mistakes

pytestmark = assignment("02_self_attention")



def random_mask(grade, *shape):
    """About a third of the positions hidden (True), the first key always visible."""
    mask = grade.rand(*shape) < 0.35
    mask[..., 0] = False
    return mask


def weights_same(grade, queries, keys, mask=None, grad=False):
    """The student's attention_weights match the reference's; when they do not, name the mistake if a
    known one (the scale, the scores' orientation, the softmax's dimension, the mask) explains them."""
    grade.same("attention_weights", queries, keys, mask=mask, grad=grad,
               mistakes=attention_mistakes(queries, keys, scale=keys.shape[-1] ** -0.5, hidden=mask))


@exercise("attention_weights")
def test_weights_on_the_lesson_data(grade):
    generator = torch.Generator().manual_seed(123)
    w_query, w_key = torch.rand(3, 2, generator=generator), torch.rand(3, 2, generator=generator)
    weights_same(grade, journey() @ w_query, journey() @ w_key)


@exercise("attention_weights", weight=2)
@pytest.mark.parametrize("lead,dtype", [((), torch.float64), ((2, 3), torch.float32)], ids=["float64", "batch2x3"])
def test_weights_on_random_data(grade, lead, dtype):
    grade.same("attention_weights", grade.randn(*lead, 4, 8, dtype=dtype), grade.randn(*lead, 6, 8, dtype=dtype),
               grad=True)


@exercise("attention_weights", weight=2)
def test_weights_with_a_mask(grade):
    mask = random_mask(grade, 4, 6)  # [Tq, Tk], broadcast over the batch
    weights_same(grade, grade.randn(2, 4, 8), grade.randn(2, 6, 8), mask=mask, grad=True)


@exercise("attention_weights")
def test_weights_of_a_query_that_sees_nothing(grade):
    mask = random_mask(grade, 3, 5)
    mask[1] = True  # query 1 sees no key: zero weights, not NaN
    grade.same("attention_weights", grade.randn(3, 4, dtype=torch.float64), grade.randn(5, 4, dtype=torch.float64),
               mask=mask)


@exercise("scaled_dot_product_attention")
def test_attention_on_the_lesson_data(grade):
    x, generator = dessert()
    w_query, w_key = torch.rand(16, 24, generator=generator), torch.rand(16, 24, generator=generator)
    w_value = torch.rand(16, 28, generator=generator)
    grade.same("scaled_dot_product_attention", x @ w_query, x @ w_key, x @ w_value)


@exercise("scaled_dot_product_attention", weight=2)
@pytest.mark.parametrize("lead,tq,tk,dtype", [((), 1, 1, torch.float32), ((3,), 5, 7, torch.float64)],
                         ids=["T1-float32", "batch3-Tq5-Tk7-float64"])
def test_attention_on_random_data(grade, lead, tq, tk, dtype):
    grade.same("scaled_dot_product_attention", grade.randn(*lead, tq, 8, dtype=dtype),
               grade.randn(*lead, tk, 8, dtype=dtype), grade.randn(*lead, tk, 5, dtype=dtype), grad=True)


@exercise("scaled_dot_product_attention")
def test_attention_with_a_padding_mask(grade):
    mask = random_mask(grade, 2, 1, 6)  # [B, 1, Tk]
    grade.same("scaled_dot_product_attention", grade.randn(2, 3, 4), grade.randn(2, 6, 4), grade.randn(2, 6, 3),
               mask=mask, grad=True)


@exercise("SelfAttention_v1")
def test_v1_on_the_lesson_data(grade):
    grade.module("SelfAttention_v1", 3, 2).same(journey())


@exercise("SelfAttention_v1", weight=2)
def test_v1_on_random_data(grade):
    grade.module("SelfAttention_v1", 6, 4, dtype=torch.float64).same(grade.randn(7, 6, dtype=torch.float64), grad=True)


@exercise("SelfAttention_v2")
def test_v2_on_the_lesson_data(grade):
    grade.module("SelfAttention_v2", 3, 2).same(journey())


@exercise("SelfAttention_v2", weight=2)
@pytest.mark.parametrize("qkv_bias", [False, True], ids=["no-bias", "qkv_bias"])
def test_v2_on_random_data(grade, qkv_bias):
    grade.module("SelfAttention_v2", 5, 3, qkv_bias=qkv_bias).same(grade.randn(4, 5), grad=True)


def after_copy(grade, d_in, d_out):
    """A SelfAttention_v2 and a SelfAttention_v1, yours and the reference's, after copy_v2_weights_into_v1."""
    v2, v1 = grade.module("SelfAttention_v2", d_in, d_out), grade.module("SelfAttention_v1", d_in, d_out)
    grade.call("copy_v2_weights_into_v1", v2.handle, v1.handle)
    if not grade.replaying:  # recorded at release; replayed, the reference's weights after the copy are on record
        grade.ref.copy_v2_weights_into_v1(v2.ref, v1.ref)
    return v2, v1


@exercise("copy_v2_weights_into_v1", weight=2)
def test_copy_gives_v1_the_weights_of_v2(grade):
    v2, v1 = after_copy(grade, 3, 2)
    v1.expect_same_parameters("after copy_v2_weights_into_v1(v2, v1), v1")


@exercise("copy_v2_weights_into_v1")
def test_copy_gives_v1_the_output_of_v2(grade):
    v2, v1 = after_copy(grade, 5, 4)
    x = grade.randn(6, 5)
    grade.expect_close(v1.call(x).out, v2.reference(x), "after copy_v2_weights_into_v1(v2, v1), v1(x) should be v2(x)")


@exercise("CrossAttention")
def test_cross_attention_on_the_lesson_data(grade):
    x, generator = dessert()
    other = torch.rand(4, 16, generator=generator)  # a second sequence of 4 tokens
    grade.module("CrossAttention", 16, 16, 24, 28).same(x, other)


@exercise("CrossAttention", weight=2)
@pytest.mark.parametrize("lead,qkv_bias,dtype", [((), False, torch.float32), ((2,), True, torch.float64)],
                         ids=["float32", "batch2-qkv_bias-float64"])
def test_cross_attention_on_random_data(grade, lead, qkv_bias, dtype):
    pair = grade.module("CrossAttention", 4, 6, 8, 5, qkv_bias=qkv_bias, dtype=dtype)
    pair.same(grade.randn(*lead, 3, 4, dtype=dtype), grade.randn(*lead, 7, 6, dtype=dtype), grad=True)
