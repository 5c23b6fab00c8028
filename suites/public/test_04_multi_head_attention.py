"""Public checks for 04_multi_head_attention: the lesson's data and fixed random cases.

Modules get the reference's weights by parameter name, so your outputs must agree with the
reference's. `grade check` compares with reference outputs recorded at release, offline.
MultiHeadAttentionWrapper uses your CausalAttention from 03: grade the two together. The checks
judge and name mistakes as the instructor's grading does (lesson/checks_04.py): the same kinds of
cases, weighted alike, on inputs of their own.
"""
import pytest
import torch

import lesson.checks_04 as checks
from grader.authoring import assignment, exercise
from lesson import journey_batch, mistaken, near_one_another

pytestmark = assignment("04_multi_head_attention")

F32, F64 = torch.float32, torch.float64


# --- split_heads --------------------------------------------------------------------------------------
@exercise("split_heads")
def test_split_the_lesson_batch_into_three_heads(grade):
    checks.split_heads_same(grade, journey_batch(), 3)


@exercise("split_heads", weight=2)
@pytest.mark.parametrize("shape,heads,dtype", [((3, 5, 8), 2, F32), ((1, 1, 4), 1, F64), ((2, 36, 12), 6, F32)],
                         ids=["B3-T5-D8-H2", "one-token-one-head-float64", "long-T36-H6"])
def test_split_random_data(grade, shape, heads, dtype):
    checks.split_heads_same(grade, grade.randn(*shape, dtype=dtype), heads, grad=True)


@exercise("split_heads", weight=2)
def test_split_a_strided_batch(grade):
    checks.split_heads_same(grade, checks.strided(grade.randn(7, 3, 10), (0, 1)), 5, grad=True)  # [3, 7, 10]


@exercise("split_heads", weight=2)
def test_split_needs_a_width_divisible_by_the_heads(grade):
    grade.raises(("ValueError",), "split_heads", grade.randn(1, 3, 10), 4)


# --- merge_heads --------------------------------------------------------------------------------------
@exercise("merge_heads")
def test_merge_the_lesson_batch(grade):
    checks.merge_heads_same(grade, journey_batch()[None])  # [1, 2, 6, 3]: two heads


@exercise("merge_heads", weight=2)
@pytest.mark.parametrize("shape,dtype", [((3, 2, 6, 3), F32), ((1, 1, 1, 3), F64), ((1, 3, 36, 4), F32)],
                         ids=["B3-H2-T6", "one-token-one-head-float64", "long-T36-H3"])
def test_merge_random_data(grade, shape, dtype):
    checks.merge_heads_same(grade, grade.randn(*shape, dtype=dtype), grad=True)


@exercise("merge_heads", weight=3)
def test_merge_what_split_heads_gives(grade):
    x = checks.strided(grade.randn(3, 6, 2, 5, dtype=F64), (1, 2))  # [B, H, T, hd] from [B, T, H, hd], not contiguous
    checks.merge_heads_same(grade, x, grad=True)


@exercise("merge_heads", weight=2)
def test_merge_heads_stored_before_the_batch(grade):
    checks.merge_heads_same(grade, checks.strided(grade.randn(2, 3, 4, 3), (0, 1)), grad=True)  # [3, 2, 4, 3]


# --- split_qkv ----------------------------------------------------------------------------------------
@exercise("split_qkv", weight=2)
@pytest.mark.parametrize("shape,heads,dtype", [((3, 4, 18), 3, F32), ((1, 1, 6), 2, F64), ((1, 30, 36), 6, F32)],
                         ids=["B3-T4-D6-H3", "one-token-float64", "long-T30-H6"])
def test_split_qkv_random_data(grade, shape, heads, dtype):
    checks.split_qkv_same(grade, grade.randn(*shape, dtype=dtype), heads)


@exercise("split_qkv", weight=2)
def test_split_qkv_of_a_strided_batch(grade):
    checks.split_qkv_same(grade, checks.strided(grade.randn(5, 3, 24), (0, 1)), 2)  # [3, 5, 24], not contiguous


@exercise("split_qkv", weight=2)
def test_split_qkv_needs_a_width_divisible_by_the_heads(grade):
    grade.raises(("ValueError",), "split_qkv", grade.randn(1, 3, 18), 4)  # D = 6 for 4 heads


@exercise("split_qkv")
def test_split_qkv_needs_d_divisible_not_only_3d(grade):
    checks.split_qkv_raises(grade, grade.randn(1, 3, 15), 3)  # 3D = 15 a multiple of 3 heads, D = 5 not


# --- MultiHeadAttentionWrapper --------------------------------------------------------------------------
@exercise("MultiHeadAttentionWrapper", weight=2)
def test_wrapper_on_the_lesson_batch(grade):
    checks.diagnosed_same(grade, grade.module(checks.WRAPPER, 3, 2, 6, 0.0, num_heads=2), journey_batch())


@exercise("MultiHeadAttentionWrapper", weight=2)
@pytest.mark.parametrize("d_in,d_out,context,heads,batch,tokens,bias,dtype", [
    pytest.param(4, 3, 9, 2, 3, 9, False, F32, id="H2-T9"),
    pytest.param(5, 4, 12, 3, 2, 7, True, F64, id="H3-qkv_bias-T7-of-12-float64"),
    pytest.param(3, 5, 6, 1, 3, 1, False, F32, id="one-head-one-token"),
])
def test_wrapper_on_random_data(grade, d_in, d_out, context, heads, batch, tokens, bias, dtype):
    checks.random_module_check(grade, checks.WRAPPER, d_in, d_out, context, heads, batch, tokens, bias, dtype)


@exercise("MultiHeadAttentionWrapper", weight=2)
def test_wrapper_in_eval_mode_has_no_dropout(grade):
    checks.expect_deterministic_eval(grade, grade.module(checks.WRAPPER, 5, 4, 9, 0.5, 3), grade.randn(3, 6, 5))


@exercise("MultiHeadAttentionWrapper", weight=2)
def test_wrapper_drops_each_heads_weights_in_training(grade):
    """Two heads of 2T = 10 features on T = 5 one-hot tokens make the output show the weights."""
    checks.expect_module_dropout(grade, grade.module(checks.WRAPPER, 5, 10, 7, 0.5, 2), tokens=5)


# --- MultiHeadAttention ---------------------------------------------------------------------------------
@exercise("MultiHeadAttention", weight=2)
def test_mha_on_the_lesson_batch(grade):
    checks.diagnosed_same(grade, grade.module(checks.MHA, 3, 2, 6, 0.0, num_heads=2), journey_batch(), grad=True)


@exercise("MultiHeadAttention", weight=2)
@pytest.mark.parametrize("d_in,d_out,context,heads,batch,tokens,bias,dtype", [
    pytest.param(5, 6, 9, 3, 3, 9, False, F32, id="H3-T9"),
    pytest.param(6, 8, 20, 2, 2, 7, True, F64, id="H2-qkv_bias-T7-of-20-float64"),
    pytest.param(4, 3, 5, 1, 3, 1, False, F32, id="one-head-one-token"),
    pytest.param(6, 12, 96, 4, 1, 90, True, F32, id="long-T90"),
])
def test_mha_on_random_data(grade, d_in, d_out, context, heads, batch, tokens, bias, dtype):
    checks.random_module_check(grade, checks.MHA, d_in, d_out, context, heads, batch, tokens, bias, dtype)


@exercise("MultiHeadAttention")
def test_mha_on_a_strided_batch(grade):
    pair = grade.module(checks.MHA, 5, 8, 9, 0.0, 4)
    checks.diagnosed_same(grade, pair, checks.strided(grade.randn(9, 3, 5), (0, 1)))  # [3, 9, 5], not contiguous


@exercise("MultiHeadAttention")
def test_mha_on_large_scores(grade):
    """Inputs of size 100 give scores far past where exp overflows: the output stays finite."""
    pair = grade.module(checks.MHA, 5, 8, 7, 0.0, 2, dtype=F64)
    x = near_one_another(grade, 3, 4, 5, norm=250.0, spread=0.05, dtype=F64)
    mistaken.unstable_unless_named(lambda: checks.diagnosed_same(grade, pair, x))


@exercise("MultiHeadAttention", weight=2)
def test_mha_needs_d_out_divisible_by_the_heads(grade):
    grade.raises(("ValueError", "AssertionError"), checks.MHA, 4, 6, 8, 0.0, 4, new=True)


@exercise("MultiHeadAttention", weight=2)
def test_mha_in_eval_mode_has_no_dropout(grade):
    pair = grade.module(checks.MHA, 5, 4, 8, 0.5, 2)
    checks.expect_deterministic_eval(grade, pair, grade.randn(3, 6, 5))


@exercise("MultiHeadAttention", weight=2)
def test_mha_drops_attention_weights_in_training(grade):
    """Heads of 2T = 10 features on T = 5 one-hot tokens make the output show the weights."""
    checks.expect_module_dropout(grade, grade.module(checks.MHA, 5, 20, 6, 0.5, 2), tokens=5)


@exercise("MultiHeadAttention", weight=2)
def test_mha_makes_as_many_operations_for_a_long_sequence(grade):
    pair, short = grade.module(checks.MHA, 3, 6, 40, 0.0, 3), grade.randn(1, 5, 3)
    checks.expect_vectorised(grade, pair, short, grade.randn(1, 40, 3))


# --- FusedQKVAttention ----------------------------------------------------------------------------------
@exercise("FusedQKVAttention")
def test_fused_on_the_lesson_batch(grade):
    checks.diagnosed_same(grade, grade.module(checks.FUSED, 3, 4, num_heads=2), journey_batch())


@exercise("FusedQKVAttention")
def test_fused_on_large_scores(grade):
    pair = grade.module(checks.FUSED, 5, 6, num_heads=2, qk_scale=0.6, dtype=F64)
    x = near_one_another(grade, 3, 4, 5, norm=250.0, spread=0.05, dtype=F64)
    mistaken.unstable_unless_named(lambda: checks.diagnosed_same(grade, pair, x))


@exercise("FusedQKVAttention", weight=2)
@pytest.mark.parametrize("dim,chan,heads,bias,qk_scale,batch,tokens,dtype", [
    pytest.param(5, 8, 2, False, None, 2, 7, F32, id="H2"),
    pytest.param(6, 12, 4, True, 0.5, 2, 5, F64, id="H4-qkv_bias-qk_scale-float64"),
    pytest.param(4, 6, 1, False, None, 3, 1, F32, id="one-head-one-token"),
    pytest.param(6, 12, 3, True, None, 1, 56, F32, id="long-N56"),
])
def test_fused_on_random_data(grade, dim, chan, heads, bias, qk_scale, batch, tokens, dtype):
    pair = grade.module(checks.FUSED, dim, chan, num_heads=heads, qkv_bias=bias, qk_scale=qk_scale, dtype=dtype)
    checks.diagnosed_same(grade, pair, grade.randn(batch, tokens, dim, dtype=dtype), grad=True)


@exercise("FusedQKVAttention")
def test_fused_on_a_strided_batch(grade):
    pair = grade.module(checks.FUSED, 5, 6, num_heads=3, qk_scale=0.5)
    checks.diagnosed_same(grade, pair, checks.strided(grade.randn(8, 3, 5), (0, 1)))  # [3, 8, 5], not contiguous


@exercise("FusedQKVAttention", weight=2)
def test_fused_needs_chan_divisible_by_the_heads(grade):
    grade.raises(("ValueError", "AssertionError"), checks.FUSED, 4, 6, num_heads=4, new=True)


@exercise("FusedQKVAttention", weight=2)
def test_fused_makes_as_many_operations_for_a_long_sequence(grade):
    pair = grade.module(checks.FUSED, 3, 6, num_heads=3)
    checks.expect_vectorised(grade, pair, grade.randn(1, 5, 3), grade.randn(1, 40, 3))
