"""Public checks for 03_causal_attention: the lesson's data and fixed random cases.

Masks are boolean and True means hidden. `grade check` compares your code with reference outputs
recorded at release, offline; ``CausalAttention`` gets the reference's weights by parameter name.
The checks judge and name mistakes as the instructor's grading does (lesson/checks_03.py): the same
kinds of cases, weighted alike, on inputs of their own.
"""
import pytest
import torch

import lesson.checks_03 as checks
from grader.authoring import assignment, exercise, low_precision
from lesson import journey_batch, journey_scores, mistaken, near_one_another, strided

pytestmark = assignment("03_causal_attention")

F32, F64 = torch.float32, torch.float64


# --- causal_mask --------------------------------------------------------------------------------------
@exercise("causal_mask", weight=3)
def test_causal_mask_of_the_lesson(grade):
    checks.causal_mask_same(grade, 6)


@exercise("causal_mask", weight=1)
@pytest.mark.parametrize("tokens", [1, 96], ids=["one-token", "96-tokens"])
def test_causal_mask_of_other_sizes(grade, tokens):
    checks.causal_mask_same(grade, tokens, named=False)


@exercise("causal_mask", weight=1)
def test_causal_mask_as_the_other_exercises_call_it(grade):
    checks.causal_masks_as_called(grade, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 48])  # every T this suite's cases use


@exercise("causal_mask", weight=1)
def test_causal_mask_on_the_grading_device(grade):
    checks.causal_mask_same(grade, 7, named=False, device=grade.device)


# --- apply_causal_mask --------------------------------------------------------------------------------
@exercise("apply_causal_mask", weight=3)
def test_apply_on_the_lesson_scores(grade):
    checks.apply_causal_mask_same(grade, journey_scores())


@exercise("apply_causal_mask", weight=2)
@pytest.mark.parametrize("shape,dtype", [((3, 6, 6), F64), ((2, 2, 5, 5), F32)],
                         ids=["three-float64", "two-by-two-float32"])
def test_apply_on_batches(grade, shape, dtype):
    checks.apply_causal_mask_same(grade, grade.randn(*shape, dtype=dtype), grad=True)


@exercise("apply_causal_mask", weight=1)
@pytest.mark.parametrize("tokens", [1, 48], ids=["one-token", "48-tokens"])
def test_apply_on_short_and_long_scores(grade, tokens):
    checks.apply_causal_mask_same(grade, grade.randn(tokens, tokens))


@exercise("apply_causal_mask", weight=1)
def test_apply_on_strided_scores(grade):
    checks.apply_causal_mask_same(grade, strided(grade.randn(7, 3, 7), (0, 1)))  # [3, 7, 7], not contiguous


@exercise("apply_causal_mask")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["half", "bfloat"])
def test_apply_in_half_precision(grade, dtype):
    grade.needs_cuda()
    scores, = low_precision(dtype, grade.randn(3, 6, 6))
    grade.same_low_precision("apply_causal_mask", scores, dtype=dtype, root_cause=checks.mask_root_cause(grade, scores))


# --- renormalize_causal_weights -----------------------------------------------------------------------
@exercise("renormalize_causal_weights", weight=3)
def test_renormalize_the_lesson_weights(grade):
    checks.renormalized_same(grade, checks.softmaxed(journey_scores()))


@exercise("renormalize_causal_weights", weight=2)
@pytest.mark.parametrize("shape,dtype", [((3, 6, 6), F64), ((2, 2, 5, 5), F32)],
                         ids=["three-float64", "two-by-two-float32"])
def test_renormalize_batches(grade, shape, dtype):
    checks.renormalized_same(grade, checks.softmax_weights(grade, *shape, dtype=dtype), grad=True)


@exercise("renormalize_causal_weights", weight=1)
@pytest.mark.parametrize("tokens", [1, 48], ids=["one-token", "48-tokens"])
def test_renormalize_short_and_long_weights(grade, tokens):
    checks.renormalized_same(grade, checks.softmax_weights(grade, tokens, tokens, dtype=F64))


@exercise("renormalize_causal_weights", weight=1)
def test_renormalize_strided_weights(grade):
    checks.renormalized_same(grade, strided(checks.softmax_weights(grade, 7, 3, 7), (0, 1)))  # rows along dim -1


# --- padding_mask -------------------------------------------------------------------------------------
@exercise("padding_mask", weight=3)
def test_padding_mask_of_random_lengths(grade):
    checks.padding_same(grade, grade.randint(1, 9, (4,)), 8)


@exercise("padding_mask", weight=1)
def test_padding_mask_of_edge_lengths(grade):
    checks.padding_same(grade, torch.tensor([5, 0, 2]), 5)  # full, empty, in between
    checks.padding_same(grade, torch.tensor([1, 1]), 1)


# --- causal_padding_mask ------------------------------------------------------------------------------
@exercise("causal_padding_mask", weight=3)
def test_causal_padding_mask_of_random_lengths(grade):
    checks.causal_padding_same(grade, grade.randint(1, 8, (3,)), 7)


@exercise("causal_padding_mask", weight=1)
def test_causal_padding_mask_of_edge_lengths(grade):
    checks.causal_padding_same(grade, torch.tensor([4, 1, 2]), 4)  # full, shortest, in between
    checks.causal_padding_same(grade, torch.tensor([1]), 1)  # one token


# --- CausalAttention ----------------------------------------------------------------------------------
@exercise("CausalAttention", weight=3)
def test_causal_attention_on_the_lesson_batch(grade):
    checks.causal_same(grade, grade.module("CausalAttention", 3, 2, 6, 0.0), journey_batch())


@exercise("CausalAttention", weight=3)
@pytest.mark.parametrize("d_in,d_out,context,batch,tokens,bias,dtype", [
    pytest.param(4, 6, 7, 2, 7, False, F32, id="d_in4-d_out6-float32"),
    pytest.param(5, 3, 10, 3, 10, True, F64, id="qkv_bias-float64"),
])
def test_causal_attention_on_random_data(grade, d_in, d_out, context, batch, tokens, bias, dtype):
    pair = grade.module("CausalAttention", d_in, d_out, context, 0.0, qkv_bias=bias, dtype=dtype)
    checks.causal_same(grade, pair, grade.randn(batch, tokens, d_in, dtype=dtype), grad=True)


@exercise("CausalAttention")
def test_causal_attention_on_large_scores(grade):
    """Inputs of size 100 give scores far past where exp overflows: the output stays finite."""
    pair = grade.module("CausalAttention", 5, 5, 7, 0.0, dtype=F64)
    x = near_one_another(grade, 3, 4, 5, norm=250.0, spread=0.05, dtype=F64)
    mistaken.unstable_unless_named(lambda: checks.causal_same(grade, pair, x))


@exercise("CausalAttention")
def test_causal_attention_on_scores_near_minus_ten_thousand(grade):
    """Every score about -10000: the future stays hidden whatever the scores (a finite fill such as
    GPT-2's old -1e4 lets it through here)."""
    pair = grade.module("CausalAttention", 5, 5, 7, 0.0, dtype=F64)
    checks.expect_masked_below_any_fill(grade, pair, 2, 5)


@exercise("CausalAttention", weight=4)
def test_causal_attention_on_fewer_tokens_than_its_context(grade):
    pair = grade.module("CausalAttention", 4, 3, 12, 0.0)
    checks.causal_same(grade, pair, grade.randn(2, 5, 4), grad=True)  # T = 5 < context_length = 12


@exercise("CausalAttention", weight=1)
@pytest.mark.parametrize("tokens,context", [(1, 3), (96, 96)], ids=["one-token", "96-tokens"])
def test_causal_attention_on_short_and_long_sequences(grade, tokens, context):
    pair = grade.module("CausalAttention", 3, 5, context, 0.0)
    checks.causal_same(grade, pair, grade.randn(2, tokens, 3))


@exercise("CausalAttention", weight=1)
def test_causal_attention_on_a_strided_batch(grade):
    pair = grade.module("CausalAttention", 4, 6, 8, 0.0)
    checks.causal_same(grade, pair, strided(grade.randn(7, 3, 4), (0, 1)))  # [3, 7, 4], not contiguous


@exercise("CausalAttention", weight=3)
@pytest.mark.parametrize("d_in,d_out,context,batch,tokens,dtype", [
    pytest.param(7, 14, 9, 2, 7, F32, id="T7-float32"),
    pytest.param(5, 8, 4, 3, 4, F64, id="T4-float64"),
])
def test_causal_attention_drops_attention_weights_in_training(grade, d_in, d_out, context, batch, tokens, dtype):
    """One-hot tokens and value heads of 2T features make the output show the weights (lesson/dropout.py)."""
    pair = grade.module("CausalAttention", d_in, d_out, context, 0.5, dtype=dtype)
    checks.expect_causal_dropout(grade, pair, tokens=tokens, p=0.5, batch=batch)


@exercise("CausalAttention")
def test_causal_attention_with_dropout_one(grade):
    checks.expect_causal_dropout(grade, grade.module("CausalAttention", 6, 12, 6, 1.0), tokens=6, p=1.0)


@exercise("CausalAttention", weight=3)
def test_causal_attention_in_eval_mode_has_no_dropout(grade):
    checks.expect_eval_deterministic(grade, grade.module("CausalAttention", 4, 6, 9, 0.5), grade.randn(3, 9, 4))


@exercise("CausalAttention", weight=1)
def test_causal_attention_has_dropout_and_a_mask_buffer(grade):
    checks.expect_structure(grade, grade.module("CausalAttention", 3, 4, 6, 0.2), journey_batch(), 6)
