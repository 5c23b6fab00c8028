"""Public checks for 03_causal_attention: the lesson's data and a few fixed random cases.

Masks are boolean and True means hidden. `grade check` compares your code with reference outputs
recorded at release, offline; ``CausalAttention`` gets the reference's weights by parameter name.
"""
import pytest
import torch

from grader.authoring import Mistake, assignment, exercise
from grader.harness import CheckFailed
from lesson import journey, journey_scores
from lesson.mistaken import causal_variants

pytestmark = assignment("03_causal_attention")


@exercise("causal_mask")
def test_causal_mask_of_the_lesson(grade):
    masks = causal_variants(6, 6)
    grade.same("causal_mask", 6, mistakes=[
        Mistake("mask-inverted", "your mask hides the past instead of the future", masks["past"]),
        Mistake("mask-inverted", "your mask is True where a token may attend; True means hidden",
                masks["past-and-diagonal"]),
        Mistake("mask-hides-diagonal", "your mask hides the diagonal too: a token may attend to itself",
                masks["future-and-diagonal"]),
    ])


@exercise("causal_mask")
@pytest.mark.parametrize("tokens", [1, 9], ids=["T1", "T9"])
def test_causal_mask_sizes(grade, tokens):
    grade.same("causal_mask", tokens, device=grade.device)


@exercise("apply_causal_mask")
def test_apply_on_the_lesson_scores(grade):
    grade.same("apply_causal_mask", journey_scores())


@exercise("apply_causal_mask", weight=2)
@pytest.mark.parametrize("shape,dtype", [((1, 1), torch.float32), ((2, 3, 5, 5), torch.float64)],
                         ids=["T1", "batch2x3-float64"])
def test_apply_on_random_scores(grade, shape, dtype):
    grade.same("apply_causal_mask", grade.randn(*shape, dtype=dtype), grad=True)


@exercise("renormalize_causal_weights")
def test_renormalize_the_lesson_weights(grade):
    weights = torch.softmax(journey_scores(), dim=-1)
    grade.same("renormalize_causal_weights", weights, mistakes=[
        Mistake("mask-after-softmax-not-renormalized", "the future is zeroed but the rows no longer sum to 1",
                weights.masked_fill(causal_variants(6, 6)["future"], 0.0))])


@exercise("renormalize_causal_weights", weight=2)
@pytest.mark.parametrize("shape,dtype", [((4, 4), torch.float32), ((2, 6, 6), torch.float64)],
                         ids=["T4-float32", "batch2-float64"])
def test_renormalize_random_weights(grade, shape, dtype):
    weights = torch.softmax(grade.randn(*shape, dtype=dtype), dim=-1)
    grade.same("renormalize_causal_weights", weights, grad=True)


@exercise("padding_mask")
def test_padding_mask_of_fixed_lengths(grade):
    grade.same("padding_mask", torch.tensor([3, 0, 5]), 5)  # in between, empty, full


@exercise("padding_mask")
def test_padding_mask_of_random_lengths(grade):
    grade.same("padding_mask", grade.randint(1, 9, (4,)), 8)


@exercise("causal_padding_mask")
def test_causal_padding_mask_of_fixed_lengths(grade):
    grade.same("causal_padding_mask", torch.tensor([4, 2, 1]), 4)


@exercise("causal_padding_mask")
def test_causal_padding_mask_of_random_lengths(grade):
    grade.same("causal_padding_mask", grade.randint(1, 7, (3,)), 6)


@exercise("CausalAttention", weight=2)
def test_causal_attention_on_the_lesson_batch(grade):
    batch = torch.stack((journey(), journey()))  # [2, 6, 3]
    grade.module("CausalAttention", 3, 2, 6, 0.0).same(batch)


@exercise("CausalAttention", weight=2)
@pytest.mark.parametrize("qkv_bias,dtype", [(False, torch.float32), (True, torch.float64)],
                         ids=["float32", "qkv_bias-float64"])
def test_causal_attention_on_random_data(grade, qkv_bias, dtype):
    pair = grade.module("CausalAttention", 5, 4, 7, 0.0, qkv_bias=qkv_bias, dtype=dtype)
    pair.same(grade.randn(3, 7, 5, dtype=dtype), grad=True)


@exercise("CausalAttention", weight=2)
def test_causal_attention_on_fewer_tokens_than_its_context(grade):
    grade.module("CausalAttention", 4, 3, 12, 0.0).same(grade.randn(2, 5, 4), grad=True)  # T = 5 < 12


@exercise("CausalAttention")
def test_causal_attention_in_eval_mode_has_no_dropout(grade):
    pair = grade.module("CausalAttention", 4, 4, 6, 0.5).train(False)
    x = grade.randn(2, 6, 4)
    first, second = pair.call(x, seed=1).out, pair.call(x, seed=2).out
    grade.expect_close(second, first, "CausalAttention(dropout=0.5) in eval mode gave two different outputs for "
                       "the same input: dropout acts in training mode only", ("dropout-in-eval",))
    pair.same(x)


@exercise("CausalAttention")
def test_causal_attention_drops_attention_weights_in_training(grade):
    """Token 0 sees only itself: dropout on its single attention weight keeps its whole output row (scaled
    by 1 / (1 - p)) or drops it. No random numbers are compared, so this holds on every machine."""
    pair = grade.module("CausalAttention", 4, 8, 6, 0.5).train(False)
    x = grade.randn(8, 6, 4)
    evaluated = pair.reference(x)[:, 0].cpu()  # [8, d_out]: token 0 of each sequence, without dropout
    trained = pair.train().call(x, seed=7).out
    tol = grade.tolerance(evaluated)
    for row, plain in zip(trained[:, 0], evaluated):
        if not (torch.allclose(row, 2 * plain, tol.rtol, tol.atol) or torch.allclose(row, 0 * plain, 0, tol.atol)):
            raise CheckFailed("CausalAttention(dropout=0.5) in training mode: the first token's output should be "
                              "either its whole eval-mode output times 2 (its one attention weight kept and scaled) "
                              "or all zeros (dropped); dropout belongs on the attention weights, after the softmax")


@exercise("CausalAttention")
def test_causal_attention_has_dropout_and_a_mask_buffer(grade):
    pair = grade.module("CausalAttention", 3, 2, 5, 0.2)
    if pair.state["modules"].get("dropout") != "Dropout":
        raise CheckFailed("CausalAttention needs an nn.Dropout attribute named 'dropout'")
    future = torch.ones(5, 5).triu(1) != 0
    if not any(tuple(b.shape) == (5, 5) and torch.equal(b != 0, future) for b in pair.state["buffers"].values()):
        raise CheckFailed("CausalAttention needs its causal mask as a buffer (self.register_buffer) of shape "
                          "[context_length, context_length], True strictly above the diagonal")
