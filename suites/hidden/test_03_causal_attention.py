"""Hidden grading suite for 03_causal_attention. Never shipped to students.

Every check compares the student's code with the reference on the same inputs (see grader/grading/fixture.py):
functions through ``grade.same`` (which also checks that inputs are left unchanged), ``CausalAttention``
through ``grade.module``, which loads the reference's weights into the student's instance by parameter
name. Dropout is judged by its effect. Inputs come from the check's own seed, fresh each run unless
--seed is given. How a check judges and names a mistake is lesson.checks_03's, which the public suite
shares: the same file gets the same verdict on both sides.
"""
import pytest
import torch

from grader.authoring import assignment, exercise, low_precision
from lesson import journey_batch, journey_scores, mistaken, near_one_another
from lesson.checks_03 import (apply_causal_mask_same, causal_mask_same, causal_masks_as_called, causal_padding_same,
                              causal_same, expect_causal_dropout, expect_eval_deterministic, expect_masked_below_any_fill,
                              expect_structure, mask_root_cause,
                              padding_same, renormalized_same, softmax_weights)

pytestmark = assignment("03_causal_attention")


# --- causal_mask -------------------------------------------------------------------------------------
@exercise("causal_mask", weight=3)
def test_causal_mask_lesson_size(grade):
    causal_mask_same(grade, 6)


@exercise("causal_mask", weight=1)
@pytest.mark.parametrize("tokens", [1, 128], ids=["T=1", "T=128"])
def test_causal_mask_sizes(grade, tokens):
    causal_mask_same(grade, tokens, named=False)


@exercise("causal_mask", weight=1)
def test_causal_mask_device_argument(grade):
    causal_mask_same(grade, 5, named=False, device=grade.device)


@exercise("causal_mask", weight=1)
def test_causal_mask_as_the_other_exercises_call_it(grade):
    causal_masks_as_called(grade, [1, 2, 3, 4, 5, 6, 7, 8, 9, 64])  # every T this suite's cases use


# --- apply_causal_mask -------------------------------------------------------------------------------
@exercise("apply_causal_mask", weight=3)
def test_apply_causal_mask_lesson_data(grade):
    scores = journey_scores()
    apply_causal_mask_same(grade, scores)


@exercise("apply_causal_mask", weight=2)
@pytest.mark.parametrize("shape,dtype", [((2, 5, 5), torch.float64), ((2, 3, 4, 4), torch.float32)],
                         ids=["batch2-float64", "leading2x3-float32"])
def test_apply_causal_mask_random(grade, shape, dtype):
    scores = grade.randn(*shape, dtype=dtype)
    apply_causal_mask_same(grade, scores, grad=True)


@exercise("apply_causal_mask", weight=1)
@pytest.mark.parametrize("tokens", [1, 64], ids=["T=1", "T=64"])
def test_apply_causal_mask_sizes(grade, tokens):
    scores = grade.randn(tokens, tokens)
    apply_causal_mask_same(grade, scores)


@exercise("apply_causal_mask", weight=1)
def test_apply_causal_mask_non_contiguous(grade):
    scores = grade.randn(5, 2, 5).transpose(0, 1)
    apply_causal_mask_same(grade, scores)


# --- renormalize_causal_weights ----------------------------------------------------------------------
@exercise("renormalize_causal_weights", weight=3)
def test_renormalize_lesson_data(grade):
    weights = torch.softmax(journey_scores(), dim=-1)
    renormalized_same(grade, weights)


@exercise("renormalize_causal_weights", weight=2)
@pytest.mark.parametrize("shape,dtype", [((2, 5, 5), torch.float64), ((2, 3, 4, 4), torch.float32)],
                         ids=["batch2-float64", "leading2x3-float32"])
def test_renormalize_random(grade, shape, dtype):
    renormalized_same(grade, softmax_weights(grade, *shape, dtype=dtype), grad=True)


@exercise("renormalize_causal_weights", weight=1)
@pytest.mark.parametrize("tokens", [1, 64], ids=["T=1", "T=64"])
def test_renormalize_sizes(grade, tokens):
    renormalized_same(grade, softmax_weights(grade, tokens, tokens, dtype=torch.float64))


@exercise("renormalize_causal_weights", weight=1)
def test_renormalize_non_contiguous(grade):
    weights = softmax_weights(grade, 6, 2, 6).transpose(0, 1)  # rows still sum to 1 along the last dim
    renormalized_same(grade, weights)


# --- padding_mask ------------------------------------------------------------------------------------
@exercise("padding_mask", weight=3)
def test_padding_mask_random(grade):
    max_len = 7
    padding_same(grade, grade.randint(1, max_len + 1, (5,)), max_len)


@exercise("padding_mask", weight=1)
def test_padding_mask_edges(grade):
    # empty, full and in between; one sequence of max_len 1
    padding_same(grade, torch.tensor([0, 6, 3]), 6)
    padding_same(grade, torch.tensor([1]), 1)


# --- causal_padding_mask -----------------------------------------------------------------------------
@exercise("causal_padding_mask", weight=3)
def test_causal_padding_mask_random(grade):
    tokens = 6
    causal_padding_same(grade, grade.randint(1, tokens + 1, (4,)), tokens)


@exercise("causal_padding_mask", weight=1)
def test_causal_padding_mask_edges(grade):
    causal_padding_same(grade, torch.tensor([1, 5, 3]), 5)  # shortest, full, in between
    causal_padding_same(grade, torch.tensor([1, 1]), 1)  # T = 1


# --- CausalAttention ---------------------------------------------------------------------------------
@exercise("CausalAttention", weight=3)
def test_causal_attention_lesson_data(grade):
    batch = journey_batch()  # [2, 6, 3], as in the lesson
    causal_same(grade, grade.module("CausalAttention", 3, 2, 6, 0.0), batch)


# (d_in, d_out, context_length, B, T, qkv_bias, dtype)
CAUSAL_CASES = {
    "batch3-d_in5-d_out7-float32": (5, 7, 8, 3, 8, False, torch.float32),
    "qkv_bias-float64": (6, 4, 9, 2, 9, True, torch.float64),
}


@exercise("CausalAttention", weight=3)
@pytest.mark.parametrize("case", list(CAUSAL_CASES.values()), ids=list(CAUSAL_CASES))
def test_causal_attention_random(grade, case):
    d_in, d_out, context_length, batch, tokens, qkv_bias, dtype = case
    pair = grade.module("CausalAttention", d_in, d_out, context_length, 0.0, qkv_bias=qkv_bias, dtype=dtype)
    causal_same(grade, pair, grade.randn(batch, tokens, d_in, dtype=dtype), grad=True)


@exercise("CausalAttention")
def test_causal_attention_large_scores(grade):
    """Scores in the thousands, past where a float64 exp overflows (about 709): the output is still
    finite and right (float64 throughout, so that the rounding of so large scores stays far below the
    tolerance)."""
    pair = grade.module("CausalAttention", 6, 6, 8, 0.0, dtype=torch.float64)
    x = near_one_another(grade, 2, 5, 6, norm=250.0, spread=0.05, dtype=torch.float64)  # near one another: scores past exp()'s range, spread within a row on every seed
    mistaken.unstable_unless_named(lambda: causal_same(grade, pair, x))


@exercise("CausalAttention")
def test_causal_attention_scores_near_minus_ten_thousand(grade):
    """Every score about -10000: the future stays hidden whatever the scores (a finite fill such as
    GPT-2's old -1e4 lets it through here)."""
    pair = grade.module("CausalAttention", 6, 6, 8, 0.0, dtype=torch.float64)
    expect_masked_below_any_fill(grade, pair, 2, 5)


@exercise("CausalAttention", weight=4)
def test_causal_attention_shorter_than_context(grade):
    pair = grade.module("CausalAttention", 5, 6, 10, 0.0)
    causal_same(grade, pair, grade.randn(2, 4, 5), grad=True)  # T = 4 < context_length = 10


@exercise("CausalAttention", weight=1)
@pytest.mark.parametrize("tokens,context_length", [(1, 4), (128, 128)], ids=["T=1", "T=128"])
def test_causal_attention_sizes(grade, tokens, context_length):
    pair = grade.module("CausalAttention", 4, 4, context_length, 0.0)
    causal_same(grade, pair, grade.randn(2, tokens, 4))


@exercise("CausalAttention", weight=1)
def test_causal_attention_non_contiguous(grade):
    pair = grade.module("CausalAttention", 5, 3, 6, 0.0)
    causal_same(grade, pair, grade.randn(6, 2, 5).transpose(0, 1))


# (d_in, d_out, context_length, B, T, dtype): d_in >= T one-hot tokens, d_out = 2T (lesson/dropout.py)
DROPOUT_CASES = {
    "batch2-T6-float32": (6, 12, 8, 2, 6, torch.float32),
    "batch3-T5-float64": (7, 10, 5, 3, 5, torch.float64),
}


@exercise("CausalAttention", weight=3)
@pytest.mark.parametrize("case", list(DROPOUT_CASES.values()), ids=list(DROPOUT_CASES))
def test_causal_attention_dropout_in_training(grade, case):
    """Dropout by its effect: each weight dropped or kept and scaled by 1/(1-p), whatever the draws."""
    d_in, d_out, context_length, batch, tokens, dtype = case
    pair = grade.module("CausalAttention", d_in, d_out, context_length, 0.5, dtype=dtype)
    expect_causal_dropout(grade, pair, tokens=tokens, p=0.5, batch=batch)


@exercise("CausalAttention")
def test_causal_attention_dropout_one_drops_every_weight(grade):
    """p = 1: every weight dropped, a zero output (nn.Dropout's; a mask scaled by 1/(1-p) gives NaN)."""
    pair = grade.module("CausalAttention", 5, 10, 5, 1.0)
    expect_causal_dropout(grade, pair, tokens=5, p=1.0)


@exercise("CausalAttention", weight=3)
def test_causal_attention_eval_is_deterministic(grade):
    expect_eval_deterministic(grade, grade.module("CausalAttention", 5, 4, 7, 0.5), grade.randn(2, 7, 5))


@exercise("CausalAttention", weight=1)
def test_causal_attention_structure(grade):
    """An nn.Dropout named dropout and the causal mask as a buffer, read from the module the student's
    process built; the point comes with a right output only (the eval-mode forward on the lesson batch)."""
    expect_structure(grade, grade.module("CausalAttention", 3, 2, 6, 0.1), journey_batch(), 6)


# --- half precision, on CUDA ------------------------------------------------------------------------
@exercise("apply_causal_mask")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_apply_causal_mask_half_precision(grade, dtype):
    grade.needs_cuda()
    scores, = low_precision(dtype, grade.randn(2, 7, 7))
    grade.same_low_precision("apply_causal_mask", scores, dtype=dtype, root_cause=mask_root_cause(grade, scores))
