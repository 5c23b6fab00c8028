"""Public checks for 04_multi_head_attention: the lesson's data and a few fixed random cases.

Modules get the reference's weights by parameter name, so your outputs must agree with the
reference's. `grade check` compares with reference outputs recorded at release, offline.
MultiHeadAttentionWrapper uses your CausalAttention from 03: grade the two together.
"""
import pytest
import torch

from grader.authoring import assignment, exercise
from lesson import journey_batch

pytestmark = assignment("04_multi_head_attention")


@exercise("split_heads")
def test_split_the_lesson_batch_into_three_heads(grade):
    grade.same("split_heads", journey_batch(), 3)


@exercise("split_heads", weight=2)
@pytest.mark.parametrize("shape,heads,dtype", [((2, 5, 8), 2, torch.float32), ((1, 1, 6), 3, torch.float64)],
                         ids=["B2-T5-D8-H2", "T1-H3-float64"])
def test_split_random_data(grade, shape, heads, dtype):
    grade.same("split_heads", grade.randn(*shape, dtype=dtype), heads, grad=True)


@exercise("split_heads")
def test_split_needs_a_width_divisible_by_the_heads(grade):
    grade.raises(("ValueError",), "split_heads", grade.randn(1, 3, 10), 4)


@exercise("merge_heads")
def test_merge_the_lesson_batch(grade):
    grade.same("merge_heads", journey_batch()[None])  # [1, 2, 6, 3]: two heads


@exercise("merge_heads", weight=2)
@pytest.mark.parametrize("shape,dtype", [((2, 4, 3, 2), torch.float32), ((1, 2, 5, 3), torch.float64)],
                         ids=["B2-H4-T3", "H2-T5-float64"])
def test_merge_random_data(grade, shape, dtype):
    grade.same("merge_heads", grade.randn(*shape, dtype=dtype), grad=True)


@exercise("merge_heads")
def test_merge_what_split_heads_gives(grade):
    grade.same("merge_heads", grade.randn(2, 5, 3, 4).transpose(1, 2))  # [B, H, T, hd], not contiguous


@exercise("split_qkv", weight=2)
@pytest.mark.parametrize("shape,heads,dtype", [((2, 4, 12), 2, torch.float32), ((1, 3, 18), 3, torch.float64)],
                         ids=["B2-T4-D4-H2", "T3-D6-H3-float64"])
def test_split_qkv_random_data(grade, shape, heads, dtype):
    grade.same("split_qkv", grade.randn(*shape, dtype=dtype), heads)


@exercise("MultiHeadAttentionWrapper")
def test_wrapper_on_the_lesson_batch(grade):
    grade.module("MultiHeadAttentionWrapper", 3, 2, 6, 0.0, num_heads=2).same(journey_batch())


@exercise("MultiHeadAttentionWrapper", weight=2)
@pytest.mark.parametrize("heads,tokens,qkv_bias,dtype", [(3, 5, False, torch.float32), (2, 8, True, torch.float64)],
                         ids=["H3-T5-of-8", "H2-qkv_bias-float64"])
def test_wrapper_on_random_data(grade, heads, tokens, qkv_bias, dtype):
    pair = grade.module("MultiHeadAttentionWrapper", 4, 3, 8, 0.0, heads, qkv_bias=qkv_bias, dtype=dtype)
    pair.same(grade.randn(2, tokens, 4, dtype=dtype), grad=True)


@exercise("MultiHeadAttention")
def test_mha_on_the_lesson_batch(grade):
    grade.module("MultiHeadAttention", 3, 2, 6, 0.0, num_heads=2).same(journey_batch())


@exercise("MultiHeadAttention", weight=2)
@pytest.mark.parametrize("heads,tokens,qkv_bias,dtype", [(4, 9, False, torch.float32), (2, 5, True, torch.float64),
                                                         (1, 1, False, torch.float32)],
                         ids=["H4-T9", "H2-T5-of-10-qkv_bias-float64", "H1-T1"])
def test_mha_on_random_data(grade, heads, tokens, qkv_bias, dtype):
    pair = grade.module("MultiHeadAttention", 6, 8, 10, 0.0, heads, qkv_bias=qkv_bias, dtype=dtype)
    pair.same(grade.randn(2, tokens, 6, dtype=dtype), grad=True)


@exercise("MultiHeadAttention")
def test_mha_in_eval_mode_has_no_dropout(grade):
    pair = grade.module("MultiHeadAttention", 4, 4, 6, 0.5, 2).train(False)
    x = grade.randn(2, 6, 4)
    first, second = pair.call(x, seed=1).out, pair.call(x, seed=2).out
    grade.expect_close(second, first, "MultiHeadAttention(dropout=0.5) in eval mode gave two different outputs "
                       "for the same input: dropout acts in training mode only", ("dropout-in-eval",))
    pair.same(x)


@exercise("MultiHeadAttention")
def test_mha_needs_d_out_divisible_by_the_heads(grade):
    grade.raises(("ValueError", "AssertionError"), "MultiHeadAttention", 4, 6, 8, 0.0, 4, new=True)


@exercise("FusedQKVAttention")
def test_fused_on_the_lesson_batch(grade):
    grade.module("FusedQKVAttention", 3, 4, num_heads=2).same(journey_batch())


@exercise("FusedQKVAttention", weight=2)
@pytest.mark.parametrize("heads,qkv_bias,qk_scale,dtype", [(2, False, None, torch.float32),
                                                           (4, True, 0.5, torch.float64)],
                         ids=["H2", "H4-qkv_bias-qk_scale-float64"])
def test_fused_on_random_data(grade, heads, qkv_bias, qk_scale, dtype):
    pair = grade.module("FusedQKVAttention", 5, 8, num_heads=heads, qkv_bias=qkv_bias, qk_scale=qk_scale, dtype=dtype)
    pair.same(grade.randn(2, 7, 5, dtype=dtype), grad=True)


@exercise("FusedQKVAttention")
def test_fused_needs_chan_divisible_by_the_heads(grade):
    grade.raises(("ValueError", "AssertionError"), "FusedQKVAttention", 4, 6, num_heads=4, new=True)
