"""Public checks for 02_self_attention: the lesson's data and fixed random cases.

Functions are compared with the reference on the same inputs; classes are built on both sides and the
reference's weights loaded into yours by parameter name, so the outputs must agree exactly (within
the dtype's tolerance). `grade check` replays reference outputs recorded at release, offline. They
check what the course's own grading checks (one token, long sequences, batches, both float dtypes,
non-contiguous inputs, masks, large scores, gradients), with the same weights and the same feedback,
on other shapes: the course's grading draws fresh random inputs.
"""
import pytest
import torch

from grader.authoring import assignment, exercise
from lesson import checks_02 as checks
from lesson import dessert, journey, projected, strided

pytestmark = assignment("02_self_attention")


def random_mask(grade, *shape):
    """About a third of the positions hidden (True), the first key always visible."""
    mask = grade.rand(*shape) < 0.35
    mask[..., 0] = False
    return mask


def cases(table):
    """pytest's parametrize arguments for ``table`` (id -> case)."""
    return {"argvalues": list(table.values()), "ids": list(table)}


# --- attention_weights -------------------------------------------------------------------------------
@exercise("attention_weights", weight=3)
def test_weights_on_the_lesson_data(grade):
    generator = torch.Generator().manual_seed(123)
    w_query, w_key = torch.rand(3, 2, generator=generator), torch.rand(3, 2, generator=generator)
    checks.weights_same(grade, *projected(journey(), w_query, w_key))


@exercise("attention_weights", weight=3)
@pytest.mark.parametrize("lead,tq,tk,d_k,dtype", **cases({
    "Tq3-Tk6-float32": ((), 3, 6, 4, torch.float32),
    "batch3-float64": ((3,), 5, 5, 8, torch.float64),
    "batch3x2-Tq2-Tk4-float32": ((3, 2), 2, 4, 6, torch.float32)}))
def test_weights_on_random_data(grade, lead, tq, tk, d_k, dtype):
    queries, keys = grade.randn(*lead, tq, d_k, dtype=dtype), grade.randn(*lead, tk, d_k, dtype=dtype)
    checks.weights_same(grade, queries, keys, grad=True)


@exercise("attention_weights")
@pytest.mark.parametrize("tq,tk,d_k", [(1, 1, 8), (100, 100, 12)], ids=["one-token", "100-tokens"])
def test_weights_of_one_token_and_of_many(grade, tq, tk, d_k):
    queries, keys = grade.randn(tq, d_k, dtype=torch.float64), grade.randn(tk, d_k, dtype=torch.float64)
    checks.weights_same(grade, queries, keys)


@exercise("attention_weights")
def test_weights_of_transposed_inputs(grade):
    queries, keys = strided(grade.randn(4, 3, 6), (0, 1)), grade.randn(6, 5).T  # [3, 4, 6] and [5, 6], strided
    checks.weights_same(grade, queries, keys, grad=True)


@exercise("attention_weights", weight=3)
@pytest.mark.parametrize("mask_shape", [(4, 6), (2, 1, 6)], ids=["mask-Tq-Tk", "mask-B-1-Tk"])
def test_weights_with_a_mask(grade, mask_shape):
    mask = random_mask(grade, *mask_shape)  # broadcast over the batch, or over the queries
    checks.weights_same(grade, grade.randn(2, 4, 4), grade.randn(2, 6, 4), mask=mask, grad=True)


@exercise("attention_weights", weight=2)
def test_weights_of_large_scores(grade):
    queries = grade.randn(3, 4, 8, scale=40.0)  # scaled scores in the hundreds: exp() overflows float32
    keys = grade.randn(3, 1, 8, scale=40.0) + grade.randn(3, 6, 8, scale=0.04)  # close together: spread weights
    checks.weights_same(grade, queries, keys, grad=True, overflow=True)


@exercise("attention_weights", weight=2)
def test_weights_of_a_query_that_sees_nothing(grade):
    mask = random_mask(grade, 3, 5)
    mask[1] = True  # query 1 sees no key: zero weights, not NaN
    queries, keys = grade.randn(3, 3, 6, dtype=torch.float64), grade.randn(3, 5, 6, dtype=torch.float64)
    checks.weights_same(grade, queries, keys, mask=mask, grad=True, grad_scale=100.0)


# --- scaled_dot_product_attention --------------------------------------------------------------------
@exercise("scaled_dot_product_attention", weight=3)
def test_attention_on_the_lesson_data(grade):
    x, generator = dessert()
    w_query, w_key = torch.rand(16, 24, generator=generator), torch.rand(16, 24, generator=generator)
    w_value = torch.rand(16, 28, generator=generator)
    checks.sdpa_same(grade, *projected(x, w_query, w_key, w_value))


@exercise("scaled_dot_product_attention", weight=2)
@pytest.mark.parametrize("lead,tq,tk,d_k,d_v,dtype", **cases({
    "one-token-float32": ((), 1, 1, 6, 3, torch.float32),
    "Tq4-Tk6-d_k5-d_v7-float64": ((), 4, 6, 5, 7, torch.float64),
    "batch3x2-float32": ((3, 2), 3, 5, 4, 6, torch.float32),
    "batch2-112-tokens-float32": ((2,), 112, 112, 8, 12, torch.float32)}))
def test_attention_on_random_data(grade, lead, tq, tk, d_k, d_v, dtype):
    queries, keys = grade.randn(*lead, tq, d_k, dtype=dtype), grade.randn(*lead, tk, d_k, dtype=dtype)
    checks.sdpa_same(grade, queries, keys, grade.randn(*lead, tk, d_v, dtype=dtype), grad=True)


@exercise("scaled_dot_product_attention", weight=2)
def test_attention_with_a_padding_mask(grade):
    mask = random_mask(grade, 2, 1, 5)  # [B, 1, Tk]
    mask[0] = True  # sequence 0 is all padding: zero outputs, not NaN
    checks.sdpa_same(grade, grade.randn(2, 3, 4), grade.randn(2, 5, 4), grade.randn(2, 5, 6), mask=mask, grad=True)


@exercise("scaled_dot_product_attention")
def test_attention_on_transposed_inputs(grade):
    queries, keys = strided(grade.randn(4, 3, 6), (0, 1)), strided(grade.randn(5, 3, 6), (0, 1))  # [3, T, 6]
    checks.sdpa_same(grade, queries, keys, strided(grade.randn(3, 7, 5), (1, 2)))  # values [3, 5, 7]


# --- SelfAttention_v1 --------------------------------------------------------------------------------
@exercise("SelfAttention_v1", weight=3)
def test_v1_on_the_lesson_data(grade):
    pair = grade.module("SelfAttention_v1", 3, 2)
    checks.module_same(grade, pair, journey(), project=checks.v1_roles(pair))


@exercise("SelfAttention_v1", weight=2)
@pytest.mark.parametrize("d_in,d_out,tokens,dtype", **cases({
    "4-to-6-T5-float32": (4, 6, 5, torch.float32),
    "6-to-3-T8-float64": (6, 3, 8, torch.float64),
    "one-token-float32": (3, 3, 1, torch.float32)}))
def test_v1_on_random_data(grade, d_in, d_out, tokens, dtype):
    pair = grade.module("SelfAttention_v1", d_in, d_out, dtype=dtype)
    checks.module_same(grade, pair, grade.randn(tokens, d_in, dtype=dtype), grad=True, project=checks.v1_roles(pair))


@exercise("SelfAttention_v1")
def test_v1_on_a_transposed_input(grade):
    pair = grade.module("SelfAttention_v1", 5, 3)
    checks.module_same(grade, pair, grade.randn(5, 6).T, project=checks.v1_roles(pair))  # [6, 5], strided


# --- SelfAttention_v2 --------------------------------------------------------------------------------
@exercise("SelfAttention_v2", weight=3)
def test_v2_on_the_lesson_data(grade):
    pair = checks.module(grade, "SelfAttention_v2", 3, 2)
    checks.module_same(grade, pair, journey(), project=checks.linear_roles(pair))


@exercise("SelfAttention_v2", weight=2)
@pytest.mark.parametrize("d_in,d_out,qkv_bias,tokens,dtype", **cases({
    "6-to-3-T5-float32": (6, 3, False, 5, torch.float32),
    "qkv_bias-5-to-6-T7-float64": (5, 6, True, 7, torch.float64),
    "qkv_bias-one-token-float32": (3, 3, True, 1, torch.float32)}))
def test_v2_on_random_data(grade, d_in, d_out, qkv_bias, tokens, dtype):
    pair = checks.module(grade, "SelfAttention_v2", d_in, d_out, qkv_bias=qkv_bias, dtype=dtype)
    checks.module_same(grade, pair, grade.randn(tokens, d_in, dtype=dtype), grad=True,
                       project=checks.linear_roles(pair))


@exercise("SelfAttention_v2")
def test_v2_on_a_transposed_input(grade):
    pair = checks.module(grade, "SelfAttention_v2", 5, 3)
    checks.module_same(grade, pair, grade.randn(5, 6).T, project=checks.linear_roles(pair))  # [6, 5], strided


# --- copy_v2_weights_into_v1 -------------------------------------------------------------------------
@exercise("copy_v2_weights_into_v1", weight=3)
@pytest.mark.parametrize("d_in,d_out,dtype", [(4, 3, torch.float32), (4, 4, torch.float64)],
                         ids=["4-to-3", "4-to-4-float64"])
def test_copy_gives_v1_the_weights_of_v2(grade, d_in, d_out, dtype):
    checks.copy_gives_parameters(grade, *checks.copied_pairs(grade, d_in, d_out, dtype))


@exercise("copy_v2_weights_into_v1", weight=2)
def test_copy_gives_v1_the_output_of_v2(grade):
    v2, v1 = checks.copied_pairs(grade, 5, 3)
    checks.copy_gives_output(grade, v2, v1, grade.randn(7, 5))


@exercise("copy_v2_weights_into_v1", weight=2)
def test_copy_leaves_v1_storage_of_its_own(grade):
    checks.copy_keeps_own_storage(grade, 5, 2, torch.float64)


@exercise("copy_v2_weights_into_v1", weight=2)
def test_copy_refuses_a_v2_with_biases(grade):
    checks.copy_refuses_biases(grade, 3, 5)


# --- CrossAttention ----------------------------------------------------------------------------------
@exercise("CrossAttention", weight=3)
def test_cross_attention_on_the_lesson_data(grade):
    x, generator = dessert()
    other = torch.rand(5, 16, generator=generator)  # a second sequence of 5 tokens
    pair = checks.module(grade, "CrossAttention", 16, 16, 24, 28)
    checks.module_same(grade, pair, x, other, project=checks.cross_roles(pair))


@exercise("CrossAttention", weight=2)
@pytest.mark.parametrize("lead,tq,tk,d_in_q,d_in_kv,d_k,d_v,qkv_bias,dtype", **cases({
    "Tq4-Tk6-float32": ((), 4, 6, 5, 3, 6, 4, False, torch.float32),
    "batch3-qkv_bias-float64": ((3,), 3, 8, 4, 6, 5, 7, True, torch.float64),
    "batch3x2-one-query-float32": ((3, 2), 1, 5, 3, 4, 6, 5, False, torch.float32)}))
def test_cross_attention_on_random_data(grade, lead, tq, tk, d_in_q, d_in_kv, d_k, d_v, qkv_bias, dtype):
    pair = checks.module(grade, "CrossAttention", d_in_q, d_in_kv, d_k, d_v, qkv_bias=qkv_bias, dtype=dtype)
    x_q, x_kv = grade.randn(*lead, tq, d_in_q, dtype=dtype), grade.randn(*lead, tk, d_in_kv, dtype=dtype)
    checks.module_same(grade, pair, x_q, x_kv, grad=True, project=checks.cross_roles(pair))


@exercise("CrossAttention")
def test_cross_attention_on_a_long_strided_sequence(grade):
    pair = checks.module(grade, "CrossAttention", 5, 3, 6, 4)
    x_q = strided(grade.randn(5, 2, 4), (0, 1), (1, 2))  # [2, 4, 5], its dimensions in memory [5, 2, 4]
    x_kv = strided(grade.randn(112, 2, 3), (0, 1))  # [2, 112, 3]
    checks.module_same(grade, pair, x_q, x_kv, project=checks.cross_roles(pair))
