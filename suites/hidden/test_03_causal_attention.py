"""Hidden grading suite for 03_causal_attention. Never shipped to students.

Every check compares the student's code with the reference on the same inputs (see grader/harness.py):
functions through ``grade.same`` (which also checks that inputs are left unchanged), ``CausalAttention``
through ``grade.module``, which loads the reference's weights into the student's instance by parameter
name. Dropout is compared under the same RNG seed on both sides. Inputs come from the check's own seed,
fresh each run unless --seed is given.
"""
import math

import pytest
import torch

from grader.diagnose import name_mistake as diagnosed
from grader.harness import CheckFailed, StudentFault

pytestmark = pytest.mark.assignment("03_causal_attention")
exercise = pytest.mark.exercise

SEED_INPUTS = [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
               [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]


def lesson_inputs(dtype=torch.float32):
    """"Your journey starts with one step": six 3-d embeddings, [6, 3]."""
    return torch.tensor(SEED_INPUTS, dtype=dtype)


def lesson_scores(dtype=torch.float32):
    inputs = lesson_inputs(dtype)
    return inputs @ inputs.T / math.sqrt(inputs.shape[-1])  # [6, 6]


def softmax_weights(grade, *shape, dtype=torch.float32):
    """Rows that sum to 1, as renormalize_causal_weights receives them."""
    return torch.softmax(grade.randn(*shape, dtype=dtype, scale=2.0), dim=-1)


def masked_softmax(scores, hidden, fill=float("-inf")):
    return torch.softmax(scores.masked_fill(hidden, fill), dim=-1)


# --- causal_mask -------------------------------------------------------------------------------------
@exercise("causal_mask", weight=3)
def test_causal_mask_lesson_size(grade):
    try:
        grade.same("causal_mask", 6)
    except CheckFailed as failed:
        ones = torch.ones(6, 6, dtype=torch.bool)
        raise diagnosed(grade, failed, grade.call("causal_mask", 6).out, [
            ("mask-inverted", "your mask hides the past; True must mark the future (j > i)", torch.tril(ones, -1)),
            ("mask-inverted", "your mask is True where attending is allowed; True means hidden", torch.tril(ones)),
            ("mask-hides-diagonal", "your mask hides the diagonal too; a token may attend to itself",
             torch.triu(ones)),
        ]) from None


@exercise("causal_mask", weight=1)
@pytest.mark.parametrize("tokens", [1, 128], ids=["T=1", "T=128"])
def test_causal_mask_sizes(grade, tokens):
    grade.same("causal_mask", tokens)


@exercise("causal_mask", weight=1)
def test_causal_mask_device_argument(grade):
    grade.same("causal_mask", 5, device=grade.device)


# --- apply_causal_mask -------------------------------------------------------------------------------
@exercise("apply_causal_mask", weight=3)
def test_apply_causal_mask_lesson_data(grade):
    grade.same("apply_causal_mask", lesson_scores())


@exercise("apply_causal_mask", weight=2)
@pytest.mark.parametrize("shape,dtype", [((2, 5, 5), torch.float64), ((2, 3, 4, 4), torch.float32)],
                         ids=["batch2-float64", "leading2x3-float32"])
def test_apply_causal_mask_random(grade, shape, dtype):
    grade.same("apply_causal_mask", grade.randn(*shape, dtype=dtype), grad=True)


@exercise("apply_causal_mask", weight=1)
@pytest.mark.parametrize("tokens", [1, 64], ids=["T=1", "T=64"])
def test_apply_causal_mask_sizes(grade, tokens):
    grade.same("apply_causal_mask", grade.randn(tokens, tokens))


@exercise("apply_causal_mask", weight=1)
def test_apply_causal_mask_non_contiguous(grade):
    grade.same("apply_causal_mask", grade.randn(5, 2, 5).transpose(0, 1))


# --- renormalize_causal_weights ----------------------------------------------------------------------
@exercise("renormalize_causal_weights", weight=3)
def test_renormalize_lesson_data(grade):
    weights = torch.softmax(lesson_scores(), dim=-1)
    try:
        grade.same("renormalize_causal_weights", weights)
    except CheckFailed as failed:
        future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
        raise diagnosed(grade, failed, grade.call("renormalize_causal_weights", weights).out, [
            ("mask-after-softmax-not-renormalized", "the future is zeroed but the rows no longer sum to 1",
             weights.masked_fill(future, 0.0)),
        ]) from None


@exercise("renormalize_causal_weights", weight=2)
@pytest.mark.parametrize("shape,dtype", [((2, 5, 5), torch.float64), ((2, 3, 4, 4), torch.float32)],
                         ids=["batch2-float64", "leading2x3-float32"])
def test_renormalize_random(grade, shape, dtype):
    grade.same("renormalize_causal_weights", softmax_weights(grade, *shape, dtype=dtype), grad=True)


@exercise("renormalize_causal_weights", weight=1)
@pytest.mark.parametrize("tokens", [1, 64], ids=["T=1", "T=64"])
def test_renormalize_sizes(grade, tokens):
    grade.same("renormalize_causal_weights", softmax_weights(grade, tokens, tokens, dtype=torch.float64))


@exercise("renormalize_causal_weights", weight=1)
def test_renormalize_non_contiguous(grade):
    weights = softmax_weights(grade, 6, 2, 6).transpose(0, 1)  # rows still sum to 1 along the last dim
    grade.same("renormalize_causal_weights", weights)


# --- padding_mask ------------------------------------------------------------------------------------
@exercise("padding_mask", weight=3)
def test_padding_mask_random(grade):
    max_len = 7
    grade.same("padding_mask", grade.randint(1, max_len + 1, (5,)), max_len)


@exercise("padding_mask", weight=1)
def test_padding_mask_edges(grade):
    # empty, full and in between; one sequence of max_len 1
    grade.same("padding_mask", torch.tensor([0, 6, 3]), 6)
    grade.same("padding_mask", torch.tensor([1]), 1)


# --- causal_padding_mask -----------------------------------------------------------------------------
@exercise("causal_padding_mask", weight=3)
def test_causal_padding_mask_random(grade):
    tokens = 6
    grade.same("causal_padding_mask", grade.randint(1, tokens + 1, (4,)), tokens)


@exercise("causal_padding_mask", weight=1)
def test_causal_padding_mask_edges(grade):
    grade.same("causal_padding_mask", torch.tensor([1, 5, 3]), 5)  # shortest, full, in between
    grade.same("causal_padding_mask", torch.tensor([1, 1]), 1)  # T = 1


# --- CausalAttention ---------------------------------------------------------------------------------
@exercise("CausalAttention", weight=3)
def test_causal_attention_lesson_data(grade):
    batch = torch.stack((lesson_inputs(), lesson_inputs()))  # [2, 6, 3], as in the lesson
    pair = grade.module("CausalAttention", 3, 2, 6, 0.0)
    try:
        pair.same(batch)
    except CheckFailed as failed:
        with torch.no_grad():
            x = batch.to(grade.device)
            q, k, v = pair.ref.W_query(x), pair.ref.W_key(x), pair.ref.W_value(x)
            scores, scale = q @ k.transpose(1, 2), 2 ** -0.5
            ones = torch.ones(6, 6, dtype=torch.bool, device=grade.device)
            future, past = torch.triu(ones, 1), torch.tril(ones, -1)
            candidates = [
                ("missing-scale", "the scores are not scaled by 1/sqrt(d_out)", masked_softmax(scores, future) @ v),
                ("mask-inverted", "the past is hidden instead of the future", masked_softmax(scores * scale, past) @ v),
                ("mask-hides-diagonal", "the diagonal is hidden too; a token may attend to itself",
                 masked_softmax(scores * scale, torch.triu(ones)) @ v),
                ("mask-after-softmax-not-renormalized", "the future is zeroed after the softmax without renormalising",
                 torch.softmax(scores * scale, -1).masked_fill(future, 0.0) @ v),
                ("scores-transposed", "the scores are K Qᵀ, not Q Kᵀ",
                 masked_softmax(scores.transpose(1, 2) * scale, future) @ v),
            ]
        raise diagnosed(grade, failed, pair.call(batch).out,
                        [(tag, hint, wrong.cpu()) for tag, hint, wrong in candidates]) from None


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
    pair.same(grade.randn(batch, tokens, d_in, dtype=dtype), grad=True)


@exercise("CausalAttention", weight=4)
def test_causal_attention_shorter_than_context(grade):
    pair = grade.module("CausalAttention", 5, 6, 10, 0.0)
    try:
        pair.same(grade.randn(2, 4, 5), grad=True)  # T = 4 < context_length = 10
    except StudentFault as fault:
        if fault.kind != "error":
            raise
        try:
            pair.call(grade.randn(2, 10, 5))  # does it work with T = context_length?
        except StudentFault:
            raise fault from None
        raise CheckFailed("CausalAttention(5, 6, context_length=10) works on 10 tokens but fails on 4: cut the mask "
                          "buffer down to the sequence, mask[:T, :T]. Your code raised:\n" + fault.message,
                          ("mask-not-truncated",)) from None


@exercise("CausalAttention", weight=1)
@pytest.mark.parametrize("tokens,context_length", [(1, 4), (128, 128)], ids=["T=1", "T=128"])
def test_causal_attention_sizes(grade, tokens, context_length):
    pair = grade.module("CausalAttention", 4, 4, context_length, 0.0)
    pair.same(grade.randn(2, tokens, 4))


@exercise("CausalAttention", weight=1)
def test_causal_attention_non_contiguous(grade):
    pair = grade.module("CausalAttention", 5, 3, 6, 0.0)
    pair.same(grade.randn(6, 2, 5).transpose(0, 1))


# (d_in, d_out, context_length, B, T, dtype); T = context_length, so that only dropout is at stake here
DROPOUT_CASES = {
    "batch2-T7-float32": (5, 4, 7, 2, 7, torch.float32),
    "batch3-T5-float64": (3, 6, 5, 3, 5, torch.float64),
}


@exercise("CausalAttention", weight=3)
@pytest.mark.parametrize("case", list(DROPOUT_CASES.values()), ids=list(DROPOUT_CASES))
def test_causal_attention_dropout_in_training(grade, case):
    d_in, d_out, context_length, batch, tokens, dtype = case
    pair = grade.module("CausalAttention", d_in, d_out, context_length, 0.5, dtype=dtype).train()
    # under the same seed, dropout on the attention weights draws the same mask as the reference's
    pair.same(grade.randn(batch, tokens, d_in, dtype=dtype), seed=1234, grad=True)


@exercise("CausalAttention", weight=3)
def test_causal_attention_eval_is_deterministic(grade):
    pair = grade.module("CausalAttention", 5, 4, 7, 0.5).train(False)
    x = grade.randn(2, 7, 5)
    first = pair.call(x, seed=1).out
    second = pair.call(x, seed=2).out
    grade.expect_close(second, first, "in eval mode, CausalAttention(dropout=0.5) gave different outputs on two "
                       "calls with the same input: dropout must be off outside training", ("dropout-in-eval",))
    pair.same(x, seed=3)


@exercise("CausalAttention", weight=1)
def test_causal_attention_structure(grade):
    pair = grade.module("CausalAttention", 3, 2, 6, 0.1)
    kind = pair.state["modules"].get("dropout")
    if kind != "Dropout":
        raise CheckFailed(f"CausalAttention should have an nn.Dropout named 'dropout', but 'dropout' is "
                          f"{'missing' if kind is None else 'a ' + kind}")
    expected = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    masks = [b for b in pair.state["buffers"].values() if tuple(b.shape) == (6, 6)]
    if not any(torch.equal(b != 0, expected) for b in masks):
        raise CheckFailed("CausalAttention should register its causal mask as a buffer "
                          "(self.register_buffer(...)) of shape [context_length, context_length], "
                          "True (or 1) strictly above the diagonal")


# --- half precision, on CUDA ------------------------------------------------------------------------
@exercise("apply_causal_mask")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_apply_causal_mask_half_precision(grade, dtype):
    grade.needs_cuda()
    grade.same_low_precision("apply_causal_mask", grade.randn(2, 7, 7), dtype=dtype)
