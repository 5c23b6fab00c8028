"""Hidden grading suite for 04_multi_head_attention. Never shipped to students.

Every check compares the student's function or module with the reference on the same inputs (see
grader/grading/fixture.py); modules get the reference's weights by parameter name. Inputs come from the
check's own seed, fresh each run unless --seed is given. How a check judges and names a mistake is
lesson.checks_04's (known mistakes recomputed from the weights the pair holds), which the public
suite shares: the same file gets the same verdict on both sides.
"""
import pytest
import torch

from grader.authoring import assignment, exercise
from lesson import journey_batch, mistaken, near_one_another
from lesson.checks_04 import (diagnosed_same, expect_deterministic_eval, expect_module_dropout, expect_vectorised,
                              merge_heads_same, random_module_check, split_heads_same, split_qkv_raises,
                              split_qkv_same)

pytestmark = assignment("04_multi_head_attention")

# softmax is allowed here: the lesson builds multi-head attention from plain torch operations.

F32, F64 = torch.float32, torch.float64
WRAPPER, MHA, FUSED = "MultiHeadAttentionWrapper", "MultiHeadAttention", "FusedQKVAttention"


# --- split_heads -------------------------------------------------------------------------------------
@exercise("split_heads")
def test_split_heads_lesson_data(grade):
    split_heads_same(grade, journey_batch(), 3)


@exercise("split_heads", weight=2)
@pytest.mark.parametrize("shape,heads,dtype", [
    pytest.param((2, 7, 12), 3, F32, id="B2-T7-D12-H3-float32"),
    pytest.param((1, 1, 6), 1, F64, id="T1-H1-float64"),
    pytest.param((3, 40, 16), 4, F32, id="long-B3-T40-D16-H4-float32"),
])
def test_split_heads_random(grade, shape, heads, dtype):
    split_heads_same(grade, grade.randn(*shape, dtype=dtype), heads, grad=True)


@exercise("split_heads", weight=2)
def test_split_heads_non_contiguous(grade):
    x = grade.randn(9, 2, 12).transpose(0, 1)  # [2, 9, 12], not contiguous
    split_heads_same(grade, x, 4, grad=True)


@exercise("split_heads", weight=2)
def test_split_heads_indivisible_raises(grade):
    grade.raises(("ValueError",), "split_heads", grade.randn(2, 4, 8), 3)


# --- merge_heads -------------------------------------------------------------------------------------
@exercise("merge_heads")
def test_merge_heads_lesson_data(grade):
    merge_heads_same(grade, journey_batch()[None])  # [1, 2, 6, 3]: the two copies as two heads


@exercise("merge_heads", weight=2)
@pytest.mark.parametrize("shape,dtype", [
    pytest.param((2, 3, 7, 4), F32, id="B2-H3-T7-hd4-float32"),
    pytest.param((1, 1, 1, 5), F64, id="T1-H1-float64"),
    pytest.param((2, 4, 40, 2), F32, id="long-H4-T40-float32"),
])
def test_merge_heads_random(grade, shape, dtype):
    merge_heads_same(grade, grade.randn(*shape, dtype=dtype), grad=True)


@exercise("merge_heads", weight=3)
def test_merge_heads_non_contiguous(grade):
    x = grade.randn(2, 8, 3, 4, dtype=F64).transpose(1, 2)  # [B, T, H, hd] -> [B, H, T, hd], as split_heads gives
    merge_heads_same(grade, x, grad=True)


@exercise("merge_heads", weight=2)
def test_merge_heads_batch_permuted(grade):
    x = grade.randn(3, 2, 5, 4).transpose(0, 1)  # [B, H, T, hd] with batch and heads swapped in memory
    merge_heads_same(grade, x, grad=True)


# --- split_qkv ---------------------------------------------------------------------------------------
@exercise("split_qkv", weight=2)
@pytest.mark.parametrize("shape,heads,dtype", [
    pytest.param((2, 5, 24), 2, F32, id="B2-T5-D8-H2-float32"),
    pytest.param((1, 1, 9), 1, F64, id="T1-H1-float64"),
    pytest.param((2, 33, 48), 4, F32, id="long-T33-D16-H4-float32"),
])
def test_split_qkv_random(grade, shape, heads, dtype):
    split_qkv_same(grade, grade.randn(*shape, dtype=dtype), heads)


@exercise("split_qkv", weight=2)
def test_split_qkv_non_contiguous(grade):
    split_qkv_same(grade, grade.randn(6, 2, 36).transpose(0, 1), 3)  # [2, 6, 36], not contiguous


@exercise("split_qkv", weight=2)
def test_split_qkv_indivisible_raises(grade):
    grade.raises(("ValueError",), "split_qkv", grade.randn(2, 4, 24), 5)  # D = 8 heads cannot share


@exercise("split_qkv")
def test_split_qkv_width_a_multiple_of_the_heads_but_not_of_three_times(grade):
    split_qkv_raises(grade, grade.randn(2, 4, 12), 3)  # 3D = 12 a multiple of 3 heads, D = 4 not


# --- MultiHeadAttentionWrapper ------------------------------------------------------------------------
@exercise(WRAPPER, weight=2)
def test_wrapper_lesson_data(grade):
    diagnosed_same(grade, grade.module(WRAPPER, 3, 2, 6, 0.0, num_heads=2), journey_batch())


@exercise(WRAPPER, weight=2)
@pytest.mark.parametrize("d_in,d_out,context,heads,batch,tokens,bias,dtype", [
    pytest.param(5, 3, 8, 3, 2, 8, False, F32, id="H3-din5-dout3-T8-float32"),
    pytest.param(4, 6, 16, 2, 3, 11, True, F64, id="bias-T11-of-16-float64"),
    pytest.param(4, 2, 8, 1, 2, 1, False, F32, id="H1-T1-float32"),
])
def test_wrapper_random(grade, d_in, d_out, context, heads, batch, tokens, bias, dtype):
    random_module_check(grade, WRAPPER, d_in, d_out, context, heads, batch, tokens, bias, dtype)


@exercise(WRAPPER, weight=2)
def test_wrapper_dropout(grade):
    """Eval: no dropout and deterministic."""
    pair = grade.module(WRAPPER, 4, 3, 10, 0.5, 2)
    expect_deterministic_eval(grade, pair, grade.randn(2, 7, 4))


@exercise(WRAPPER, weight=2)
def test_wrapper_dropout_on_each_heads_weights(grade):
    """Dropout by its effect (lesson/dropout.py): two heads of 2T = 12 features on T = 6 one-hot tokens."""
    expect_module_dropout(grade, grade.module(WRAPPER, 6, 12, 8, 0.5, 2), tokens=6)


# --- MultiHeadAttention -------------------------------------------------------------------------------
@exercise(MHA, weight=2)
def test_mha_lesson_data(grade):
    diagnosed_same(grade, grade.module(MHA, 3, 2, 6, 0.0, num_heads=2), journey_batch(), grad=True)


@exercise(MHA, weight=2)
@pytest.mark.parametrize("d_in,d_out,context,heads,batch,tokens,bias,dtype", [
    pytest.param(6, 8, 12, 4, 2, 12, False, F32, id="H4-din6-dout8-T12-float32"),
    pytest.param(4, 6, 32, 2, 3, 9, True, F64, id="H2-bias-T9-of-32-float64"),
    pytest.param(5, 4, 8, 1, 2, 1, False, F32, id="H1-T1-float32"),
    pytest.param(8, 8, 128, 2, 1, 100, True, F32, id="long-T100-float32"),
])
def test_mha_random(grade, d_in, d_out, context, heads, batch, tokens, bias, dtype):
    random_module_check(grade, MHA, d_in, d_out, context, heads, batch, tokens, bias, dtype)


@exercise(MHA)
def test_mha_non_contiguous(grade):
    pair = grade.module(MHA, 6, 6, 10, 0.0, 3)
    diagnosed_same(grade, pair, grade.randn(10, 2, 6).transpose(0, 1))


@exercise(MHA)
def test_mha_large_scores(grade):
    """Scores in the thousands, past where a float64 exp overflows: the output is still finite and right
    (float64 throughout, so that the rounding of so large scores stays far below the tolerance)."""
    pair = grade.module(MHA, 6, 6, 10, 0.0, 3, dtype=F64)
    x = near_one_another(grade, 2, 5, 6, norm=250.0, spread=0.05, dtype=F64)  # near one another: scores past exp()'s range, spread within a row on every seed
    mistaken.unstable_unless_named(lambda: diagnosed_same(grade, pair, x))


@exercise(MHA, weight=2)
def test_mha_indivisible_raises(grade):
    grade.raises(("ValueError", "AssertionError"), MHA, 3, 4, 6, 0.0, 3, new=True)


@exercise(MHA, weight=2)
def test_mha_eval_is_deterministic(grade):
    pair, x = grade.module(MHA, 4, 6, 10, 0.5, 2), grade.randn(2, 8, 4)
    expect_deterministic_eval(grade, pair, x)


@exercise(MHA, weight=2)
def test_mha_dropout_on_weights(grade):
    """Dropout by its effect (lesson/dropout.py): heads of 2T = 12 features on T = 6 one-hot tokens."""
    expect_module_dropout(grade, grade.module(MHA, 6, 24, 8, 0.5, 2), tokens=6)


@exercise(MHA, weight=2)
def test_mha_vectorised(grade):
    pair, x = grade.module(MHA, 4, 4, 32, 0.0, 2), grade.randn(1, 4, 4)
    expect_vectorised(grade, pair, x, grade.randn(1, 32, 4))


# --- FusedQKVAttention --------------------------------------------------------------------------------
@exercise(FUSED)
def test_fused_lesson_data(grade):
    diagnosed_same(grade, grade.module(FUSED, 3, 4, num_heads=2), journey_batch())


@exercise(FUSED)
def test_fused_large_scores(grade):
    """As test_mha_large_scores, for the fused projection."""
    pair = grade.module(FUSED, 6, 8, num_heads=4, qk_scale=0.7, dtype=F64)
    x = near_one_another(grade, 2, 5, 6, norm=250.0, spread=0.05, dtype=F64)  # near one another: scores past exp()'s range, spread within a row on every seed
    mistaken.unstable_unless_named(lambda: diagnosed_same(grade, pair, x))


@exercise(FUSED, weight=2)
@pytest.mark.parametrize("dim,chan,heads,bias,qk_scale,batch,tokens,dtype", [
    pytest.param(6, 8, 2, False, None, 2, 5, F32, id="H2-dim6-chan8-float32"),
    pytest.param(4, 12, 3, True, 0.3, 1, 7, F64, id="H3-bias-qk_scale-float64"),
    pytest.param(5, 4, 1, False, None, 2, 1, F32, id="H1-N1-float32"),
    pytest.param(8, 16, 4, True, None, 1, 64, F32, id="long-N64-bias-float32"),
])
def test_fused_random(grade, dim, chan, heads, bias, qk_scale, batch, tokens, dtype):
    pair = grade.module(FUSED, dim, chan, num_heads=heads, qkv_bias=bias, qk_scale=qk_scale, dtype=dtype)
    diagnosed_same(grade, pair, grade.randn(batch, tokens, dim, dtype=dtype), grad=True)


@exercise(FUSED)
def test_fused_non_contiguous(grade):
    pair = grade.module(FUSED, 6, 8, num_heads=4, qk_scale=0.7)
    diagnosed_same(grade, pair, grade.randn(9, 2, 6).transpose(0, 1))


@exercise(FUSED, weight=2)
def test_fused_indivisible_raises(grade):
    grade.raises(("ValueError", "AssertionError"), FUSED, 4, 6, 4, new=True)


@exercise(FUSED, weight=2)
def test_fused_vectorised(grade):
    pair = grade.module(FUSED, 4, 4, num_heads=2)
    expect_vectorised(grade, pair, grade.randn(1, 4, 4), grade.randn(1, 32, 4))
