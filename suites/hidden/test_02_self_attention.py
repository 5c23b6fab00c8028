"""Hidden grading suite for 02_self_attention. Never shipped to students.

Every check compares the student's code with the reference on the same inputs (see grader/grading/fixture.py):
functions through ``grade.same``, classes through ``grade.module``, which builds the reference's and the
student's instance and loads the reference's weights into the student's by parameter name. Inputs come
from the check's own seed, fresh each run unless --seed is given.
"""
import pytest
import torch

from grader.authoring import assignment, exercise, low_precision
from lesson import dessert, journey
from lesson.checks_02 import (attention_root_cause, copied_pairs, copy_gives_output, copy_gives_parameters, copy_keeps_own_storage,
                              copy_refuses_biases, cross_roles, linear_roles, module, module_same, sdpa_same, v1_roles,
                              weights_same)

pytestmark = assignment("02_self_attention")



def hidden(grade, *shape, p=0.3):
    """A random boolean mask, True = hidden."""
    return grade.rand(*shape) < p


# --- attention_weights -------------------------------------------------------------------------------
@exercise("attention_weights", weight=3)
def test_attention_weights_lesson_data(grade):
    inputs = journey()
    g = torch.Generator().manual_seed(123)  # the lesson's W_query, W_key (torch.manual_seed(123); torch.rand(3, 2))
    w_query, w_key = torch.rand(3, 2, generator=g), torch.rand(3, 2, generator=g)
    queries, keys = inputs @ w_query, inputs @ w_key
    weights_same(grade, queries, keys)


# (leading batch dims, Tq, Tk, d_k, dtype)
WEIGHTS_CASES = {
    "Tq5-Tk7-float32": ((), 5, 7, 8, torch.float32),
    "batch2-float64": ((2,), 6, 6, 16, torch.float64),
    "leading2x3-Tq4-Tk5-float32": ((2, 3), 4, 5, 8, torch.float32),
}


@exercise("attention_weights", weight=3)
@pytest.mark.parametrize("case", list(WEIGHTS_CASES.values()), ids=list(WEIGHTS_CASES))
def test_attention_weights_random(grade, case):
    lead, tq, tk, dk, dtype = case
    weights_same(grade, grade.randn(*lead, tq, dk, dtype=dtype), grade.randn(*lead, tk, dk, dtype=dtype), grad=True)


@exercise("attention_weights", weight=1)
@pytest.mark.parametrize("tq,tk", [(1, 1), (128, 128)], ids=["T=1", "T=128"])
def test_attention_weights_sizes(grade, tq, tk):
    weights_same(grade, grade.randn(tq, 16, dtype=torch.float64), grade.randn(tk, 16, dtype=torch.float64))


@exercise("attention_weights", weight=1)
def test_attention_weights_non_contiguous(grade):
    weights_same(grade, grade.randn(5, 2, 8).transpose(0, 1), grade.randn(8, 6).T, grad=True)


@exercise("attention_weights", weight=3)
@pytest.mark.parametrize("mask_shape", [(5, 7), (3, 1, 7)], ids=["mask[Tq,Tk]", "mask[B,1,Tk]"])
def test_attention_weights_mask(grade, mask_shape):
    mask = hidden(grade, *mask_shape)
    mask[..., 0] = False  # every query sees at least one key here; fully hidden rows have their own check
    queries, keys = grade.randn(3, 5, 8), grade.randn(3, 7, 8)
    weights_same(grade, queries, keys, mask=mask, grad=True)


@exercise("attention_weights", weight=2)
def test_attention_weights_large_scores(grade):
    """Scaled scores in the hundreds, far past where a float32 exp overflows (about 88): a softmax
    without its max shift gives inf / inf = NaN. The keys sit close to one another, so that each
    query's scaled scores differ by about one: its weights are spread, not one-hot, on every seed (a
    missing or wrong scale, which one-hot weights would hide on some seeds, fails here on all)."""
    queries = grade.randn(2, 5, 8, scale=40.0)
    keys = grade.randn(2, 1, 8, scale=40.0) + grade.randn(2, 7, 8, scale=0.04)  # [2, 7, 8], near one another
    weights_same(grade, queries, keys, grad=True, overflow=True)


@exercise("attention_weights", weight=2)
def test_attention_weights_fully_hidden_row(grade):
    mask = hidden(grade, 4, 6)
    mask[..., 0] = False
    mask[2] = True  # query 2 sees nothing: zero weights, not NaN
    queries, keys = grade.randn(2, 4, 8, dtype=torch.float64), grade.randn(2, 6, 8, dtype=torch.float64)
    weights_same(grade, queries, keys, mask=mask, grad=True, grad_scale=100.0)  # large: a clamped 0 divisor overflows


# --- scaled_dot_product_attention --------------------------------------------------------------------
@exercise("scaled_dot_product_attention", weight=3)
def test_sdpa_lesson_data(grade):
    x, g = dessert()
    w_query, w_key = torch.rand(16, 24, generator=g), torch.rand(16, 24, generator=g)  # d_q = d_k = 24
    w_value = torch.rand(16, 28, generator=g)  # d_v = 28
    sdpa_same(grade, x @ w_query, x @ w_key, x @ w_value)


# (leading batch dims, Tq, Tk, d_k, d_v, dtype)
SDPA_CASES = {
    "T=1-float32": ((), 1, 1, 4, 6, torch.float32),
    "Tq5-Tk7-dk8-dv3-float64": ((), 5, 7, 8, 3, torch.float64),
    "leading2x3-float32": ((2, 3), 4, 6, 8, 5, torch.float32),
    "batch2-T128-float32": ((2,), 128, 128, 16, 8, torch.float32),
}


@exercise("scaled_dot_product_attention", weight=2)
@pytest.mark.parametrize("case", list(SDPA_CASES.values()), ids=list(SDPA_CASES))
def test_sdpa_random(grade, case):
    lead, tq, tk, dk, dv, dtype = case
    sdpa_same(grade, grade.randn(*lead, tq, dk, dtype=dtype), grade.randn(*lead, tk, dk, dtype=dtype),
              grade.randn(*lead, tk, dv, dtype=dtype), grad=True)


@exercise("scaled_dot_product_attention", weight=2)
def test_sdpa_mask(grade):
    mask = hidden(grade, 3, 1, 6)  # a padding-style mask, [B, 1, Tk]
    mask[:, :, 0] = False
    mask[1] = True  # sequence 1 hides every key: zero outputs, not NaN
    sdpa_same(grade, grade.randn(3, 4, 8), grade.randn(3, 6, 8), grade.randn(3, 6, 5), mask=mask, grad=True)


@exercise("scaled_dot_product_attention", weight=1)
def test_sdpa_non_contiguous(grade):
    sdpa_same(grade, grade.randn(5, 2, 8).transpose(0, 1), grade.randn(6, 2, 8).transpose(0, 1),
              grade.randn(2, 4, 6).transpose(1, 2))


# --- SelfAttention_v1 --------------------------------------------------------------------------------
@exercise("SelfAttention_v1", weight=3)
def test_self_attention_v1_lesson_data(grade):
    pair = grade.module("SelfAttention_v1", 3, 2)
    module_same(grade, pair, journey(), project=v1_roles(pair))


# (d_in, d_out, T, dtype)
V1_CASES = {
    "d_in5-d_out7-T6-float32": (5, 7, 6, torch.float32),
    "d_in8-d_out4-T9-float64": (8, 4, 9, torch.float64),
    "T=1-float32": (4, 4, 1, torch.float32),
}


@exercise("SelfAttention_v1", weight=2)
@pytest.mark.parametrize("case", list(V1_CASES.values()), ids=list(V1_CASES))
def test_self_attention_v1_random(grade, case):
    d_in, d_out, tokens, dtype = case
    pair = grade.module("SelfAttention_v1", d_in, d_out, dtype=dtype)
    module_same(grade, pair, grade.randn(tokens, d_in, dtype=dtype), grad=True, project=v1_roles(pair))


@exercise("SelfAttention_v1", weight=1)
def test_self_attention_v1_non_contiguous(grade):
    pair = grade.module("SelfAttention_v1", 6, 4)
    module_same(grade, pair, grade.randn(6, 7).T, project=v1_roles(pair))


# --- SelfAttention_v2 --------------------------------------------------------------------------------
@exercise("SelfAttention_v2", weight=3)
def test_self_attention_v2_lesson_data(grade):
    pair = module(grade, "SelfAttention_v2", 3, 2)
    module_same(grade, pair, journey(), project=linear_roles(pair))


# (d_in, d_out, qkv_bias, T, dtype)
V2_CASES = {
    "d_in5-d_out7-T6-float32": (5, 7, False, 6, torch.float32),
    "qkv_bias-d_in8-d_out4-T9-float64": (8, 4, True, 9, torch.float64),
    "qkv_bias-T=1-float32": (4, 4, True, 1, torch.float32),
}


@exercise("SelfAttention_v2", weight=2)
@pytest.mark.parametrize("case", list(V2_CASES.values()), ids=list(V2_CASES))
def test_self_attention_v2_random(grade, case):
    d_in, d_out, qkv_bias, tokens, dtype = case
    pair = module(grade, "SelfAttention_v2", d_in, d_out, qkv_bias=qkv_bias, dtype=dtype)
    module_same(grade, pair, grade.randn(tokens, d_in, dtype=dtype), grad=True, project=linear_roles(pair))


@exercise("SelfAttention_v2", weight=1)
def test_self_attention_v2_non_contiguous(grade):
    pair = module(grade, "SelfAttention_v2", 6, 4)
    module_same(grade, pair, grade.randn(6, 7).T, project=linear_roles(pair))


# --- copy_v2_weights_into_v1 -------------------------------------------------------------------------
@exercise("copy_v2_weights_into_v1", weight=3)
@pytest.mark.parametrize("d_in,d_out,dtype", [(3, 2, torch.float32), (5, 5, torch.float64)],
                         ids=["d_in3-d_out2", "square-float64"])
def test_copy_v2_weights_parameters(grade, d_in, d_out, dtype):
    v2, v1 = copied_pairs(grade, d_in, d_out, dtype)
    copy_gives_parameters(grade, v2, v1)


@exercise("copy_v2_weights_into_v1", weight=2)
def test_copy_v2_weights_same_output(grade):
    v2, v1 = copied_pairs(grade, 6, 4)
    copy_gives_output(grade, v2, v1, grade.randn(5, 6))


@exercise("copy_v2_weights_into_v1", weight=2)
def test_copy_v2_weights_leaves_v1_its_own_storage(grade):
    copy_keeps_own_storage(grade, 4, 3)


@exercise("copy_v2_weights_into_v1", weight=2)
def test_copy_v2_weights_refuses_biases(grade):
    copy_refuses_biases(grade, 6, 4)


# --- CrossAttention ----------------------------------------------------------------------------------
@exercise("CrossAttention", weight=3)
def test_cross_attention_lesson_data(grade):
    x, g = dessert()
    x_kv = torch.rand(8, 16, generator=g)  # a second sequence, of 8 tokens
    pair = module(grade, "CrossAttention", 16, 16, 24, 28)
    module_same(grade, pair, x, x_kv, project=cross_roles(pair))


# (leading batch dims, Tq, Tk, d_in_q, d_in_kv, d_k, d_v, qkv_bias, dtype)
CROSS_CASES = {
    "Tq5-Tk7-d_in_q6-d_in_kv4-float32": ((), 5, 7, 6, 4, 8, 3, False, torch.float32),
    "batch2-qkv_bias-float64": ((2,), 4, 9, 5, 7, 6, 10, True, torch.float64),
    "leading2x3-Tq=1-float32": ((2, 3), 1, 6, 4, 5, 8, 6, False, torch.float32),
}


@exercise("CrossAttention", weight=2)
@pytest.mark.parametrize("case", list(CROSS_CASES.values()), ids=list(CROSS_CASES))
def test_cross_attention_random(grade, case):
    lead, tq, tk, d_in_q, d_in_kv, dk, dv, qkv_bias, dtype = case
    pair = module(grade, "CrossAttention", d_in_q, d_in_kv, dk, dv, qkv_bias=qkv_bias, dtype=dtype)
    module_same(grade, pair, grade.randn(*lead, tq, d_in_q, dtype=dtype), grade.randn(*lead, tk, d_in_kv, dtype=dtype),
                grad=True, project=cross_roles(pair))


@exercise("CrossAttention", weight=1)
def test_cross_attention_long_non_contiguous(grade):
    pair = module(grade, "CrossAttention", 6, 4, 8, 5)
    module_same(grade, pair, grade.randn(6, 2, 3).permute(1, 2, 0), grade.randn(128, 2, 4).transpose(0, 1),
                project=cross_roles(pair))


# --- half precision, on CUDA ------------------------------------------------------------------------
HALVES = [torch.float16, torch.bfloat16]


@exercise("scaled_dot_product_attention")
@pytest.mark.parametrize("dtype", HALVES, ids=["float16", "bfloat16"])
def test_sdpa_half_precision(grade, dtype):
    grade.needs_cuda()
    q, k, v = low_precision(dtype, grade.randn(2, 9, 16), grade.randn(2, 11, 16), grade.randn(2, 11, 8))
    grade.same_low_precision("scaled_dot_product_attention", q, k, v, dtype=dtype,
                             root_cause=lambda failure, out: attention_root_cause(grade, failure, out, q, k, v))
