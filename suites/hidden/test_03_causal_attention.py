"""Hidden grading suite for 03_causal_attention. Never shipped to students.

Every check compares the student's code with the reference on the same inputs (see grader/harness.py):
functions through ``grade.same`` (which also checks that inputs are left unchanged), ``CausalAttention``
through ``grade.module``, which loads the reference's weights into the student's instance by parameter
name. Dropout is compared under the same RNG seed on both sides. Inputs come from the check's own seed,
fresh each run unless --seed is given.
"""
import pytest
import torch

from grader import diagnose
from grader.authoring import Mistake, assignment, exercise
from grader.dropout import expect_dropout_on_weights
from grader.diagnose import name_mistake
from grader.harness import CheckFailed, StudentFault
from lesson import journey_batch, journey_scores, mistaken

pytestmark = assignment("03_causal_attention")


def softmax_weights(grade, *shape, dtype=torch.float32):
    """Rows that sum to 1, as renormalize_causal_weights receives them."""
    return torch.softmax(grade.randn(*shape, dtype=dtype, scale=2.0), dim=-1)


def masked_softmax(scores, hidden, fill=float("-inf")):
    return torch.softmax(scores.masked_fill(hidden, fill), dim=-1)


# --- naming the mistake ------------------------------------------------------------------------------
def causal_masks(tokens, device=None):
    return mistaken.causal_variants(tokens, tokens, device)


def mask_mistakes(make):
    """Candidates for a computation ``make(hidden)`` that uses the causal mask ``hidden``, with the
    mask done wrong; ``make(None)``: no mask at all."""
    return [Mistake("mask-not-applied", "the mask has no effect on your output", lambda: make(None)),
            Mistake("mask-inverted", "your mask hides the past instead of the future", lambda: make("past")),
            Mistake("mask-inverted", "your mask hides the past and the token itself, and shows the future",
                    lambda: make("past-and-diagonal")),
            Mistake("mask-hides-diagonal", "your mask hides the diagonal too: a token may attend to itself",
                    lambda: make("future-and-diagonal"))]


def causal_mask_root_cause(grade, failure, out, tokens, compose):
    """The failure blamed on the student's causal_mask, when ``compose(mask)`` (this exercise done right
    with that mask) gives the student's output."""
    right = torch.triu(torch.ones(tokens, tokens, dtype=torch.bool), 1)
    masks = causal_masks(tokens)
    return diagnose.blame(grade, failure, out, "causal_mask", diagnose.their(grade, "causal_mask", tokens), right,
                          compose, mask_mistakes(lambda name: masks[name] if name else right))


def masked_same(grade, name, x, compose, grad=False):
    """``name(x)`` matches the reference; if not, blame the student's causal_mask or name the mask
    mistake. ``compose(hidden)`` is ``name`` done right with the mask ``hidden`` (None: no mask)."""
    masks = causal_masks(x.shape[-1])
    grade.same(name, x, grad=grad, mistakes=mask_mistakes(lambda m: compose(masks[m] if m else None)),
               right=lambda: compose(masks["future"]),
               root_cause=lambda failure, out: causal_mask_root_cause(grade, failure, out, x.shape[-1], compose))


def renormalized_same(grade, weights, grad=False):
    """renormalize_causal_weights, with the mask mistakes and the missing renormalisation named."""
    future = torch.triu(torch.ones(weights.shape[-1], weights.shape[-1], dtype=torch.bool), 1)
    compose = renormalize(weights)
    # a mask mistake first (masked_same), then the missing renormalisation, on the output the failure carries
    diagnose.diagnosed(
        grade, lambda: masked_same(grade, "renormalize_causal_weights", weights, compose, grad=grad), None,
        [Mistake("mask-after-softmax-not-renormalized", "the future is zeroed but the rows no longer sum to 1",
                 lambda: weights.masked_fill(future, 0.0))], right=lambda: compose(future))


def padding_same(grade, lengths, max_len):
    positions = torch.arange(max_len)[None, :]
    grade.same("padding_mask", lengths, max_len, right=lambda: positions >= lengths[:, None], mistakes=[
        Mistake("mask-inverted", "your mask marks the real tokens; True must mark the padding",
                lambda: positions < lengths[:, None]),
        Mistake(None, "your mask is off by one: position lengths[b] is already padding",
                lambda: positions > lengths[:, None])])


def apply_mask(scores):
    return lambda hidden: scores if hidden is None else scores.masked_fill(hidden, float("-inf"))


def renormalize(weights):
    def compose(hidden):
        kept = weights if hidden is None else weights.masked_fill(hidden, 0.0)
        return kept / kept.sum(dim=-1, keepdim=True)
    return compose


# --- causal_mask -------------------------------------------------------------------------------------
@exercise("causal_mask", weight=3)
def test_causal_mask_lesson_size(grade):
    ones = torch.ones(6, 6, dtype=torch.bool)
    grade.same("causal_mask", 6, mistakes=[
        Mistake("mask-inverted", "your mask hides the past; True must mark the future (j > i)", torch.tril(ones, -1)),
        Mistake("mask-inverted", "your mask is True where attending is allowed; True means hidden", torch.tril(ones)),
        Mistake("mask-hides-diagonal", "your mask hides the diagonal too; a token may attend to itself",
                torch.triu(ones)),
    ])


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
    scores = journey_scores()
    masked_same(grade, "apply_causal_mask", scores, apply_mask(scores))


@exercise("apply_causal_mask", weight=2)
@pytest.mark.parametrize("shape,dtype", [((2, 5, 5), torch.float64), ((2, 3, 4, 4), torch.float32)],
                         ids=["batch2-float64", "leading2x3-float32"])
def test_apply_causal_mask_random(grade, shape, dtype):
    scores = grade.randn(*shape, dtype=dtype)
    masked_same(grade, "apply_causal_mask", scores, apply_mask(scores), grad=True)


@exercise("apply_causal_mask", weight=1)
@pytest.mark.parametrize("tokens", [1, 64], ids=["T=1", "T=64"])
def test_apply_causal_mask_sizes(grade, tokens):
    scores = grade.randn(tokens, tokens)
    masked_same(grade, "apply_causal_mask", scores, apply_mask(scores))


@exercise("apply_causal_mask", weight=1)
def test_apply_causal_mask_non_contiguous(grade):
    scores = grade.randn(5, 2, 5).transpose(0, 1)
    masked_same(grade, "apply_causal_mask", scores, apply_mask(scores))


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
def causal_padding_same(grade, lengths, tokens):
    """causal_padding_mask matches the reference; if not, blame the student's causal_mask or
    padding_mask when it is theirs that is wrong, or name the mask mistake."""
    masks = causal_masks(tokens)
    positions = torch.arange(tokens)
    padding = positions[None, :] >= lengths[:, None]  # [B, T]

    def combined(future=masks["future"], pad=padding, keys=True):
        return future[None] | (pad[:, None, :] if keys else pad[:, :, None])

    def root_cause(failure, out):
        return diagnose.blame(grade, failure, out, "causal_mask", diagnose.their(grade, "causal_mask", tokens),
                              masks["future"], lambda m: combined(future=m),
                              mask_mistakes(lambda name: masks[name] if name else masks["future"])) or \
            diagnose.blame(grade, failure, out, "padding_mask", diagnose.their(grade, "padding_mask", lengths, tokens),
                           padding, lambda m: combined(pad=m),
                           [Mistake("mask-inverted", "it marks the real tokens, not the padding",
                                    lambda: positions[None, :] < lengths[:, None])])

    causal = [Mistake(m.id, m.explanation, lambda make=m.output: combined(future=make()))
              for m in mask_mistakes(lambda name: masks[name] if name else torch.zeros_like(masks["future"]))]
    grade.same("causal_padding_mask", lengths, tokens, right=lambda: combined(), root_cause=root_cause, mistakes=[
        *causal,
        Mistake("mask-inverted", "your padding part marks the real tokens, not the padding",
                lambda: combined(pad=~padding)),
        Mistake(None, "your padding hides queries (rows) instead of keys (columns)", lambda: combined(keys=False)),
        Mistake(None, "your mask is only the padding: the future is not hidden",
                lambda: combined(future=torch.zeros_like(masks["future"])))])


@exercise("causal_padding_mask", weight=3)
def test_causal_padding_mask_random(grade):
    tokens = 6
    causal_padding_same(grade, grade.randint(1, tokens + 1, (4,)), tokens)


@exercise("causal_padding_mask", weight=1)
def test_causal_padding_mask_edges(grade):
    causal_padding_same(grade, torch.tensor([1, 5, 3]), 5)  # shortest, full, in between
    causal_padding_same(grade, torch.tensor([1, 1]), 1)  # T = 1


# --- CausalAttention ---------------------------------------------------------------------------------
def causal_same(grade, pair, x, *, grad=False, seed=None):
    """The student's CausalAttention gives the reference's output on ``x``; if not, name the mistake:
    a mask buffer used whole (mask-not-truncated), the student's causal_mask (the root cause), or one
    of attention's usual mistakes, recomputed with the reference's weights."""
    def projections():
        ref = pair.ref
        with torch.no_grad():
            xd = x.to(grade.device)
            q, k, v = (t.cpu() for t in (ref.W_query(xd), ref.W_key(xd), ref.W_value(xd)))
        dropout = ref.dropout if ref.training and ref.dropout.p > 0 else None
        return q, k, v, dict(scale=k.shape[-1] ** -0.5, dropout=dropout, seed=seed)

    tokens = x.shape[1]
    try:
        return pair.same(x, grad=grad, seed=seed)
    except StudentFault as fault:
        found = not_truncated(grade, pair, x, fault)
        if found is fault and not grade.replaying:  # raised as the right computation does on their causal_mask?
            q, k, v, settings = projections()
            found = diagnose.raised(grade, fault, lambda failure, out: causal_mask_root_cause(
                grade, failure, out, tokens, lambda m: mistaken.attend(q, k, v, hidden=m, rows="nan", **settings)))
        raise found from None
    except CheckFailed as failure:
        if failure.misconceptions or grade.replaying or failure.out is None:
            raise
        out = failure.out  # the student's output, carried by the failure
        q, k, v, settings = projections()
        future = torch.triu(torch.ones(tokens, tokens, dtype=torch.bool), 1)
        right = mistaken.attend(q, k, v, hidden=future, **settings)
        candidates = mistaken.attention_mistakes(q, k, v, hidden=future, causal=True, inputs=x, **settings) + \
            mistaken.role_mistakes({"query": q, "key": k, "value": v},
                                   lambda *qkv: mistaken.attend(*qkv, hidden=future, **settings))
        raise causal_mask_root_cause(grade, failure, out, tokens,  # torch.softmax, as a class would
                                     lambda m: mistaken.attend(q, k, v, hidden=m, rows="nan", **settings)) or name_mistake(
            grade, failure, out, candidates, right) from None


def not_truncated(grade, pair, x, fault):
    """A crash for T < context_length that goes away with context_length = T is mask-not-truncated."""
    args, tokens = pair.args, x.shape[1]
    return diagnose.not_truncated(fault, tokens, args[2], lambda: grade.module(
        "CausalAttention", args[0], args[1], tokens, *args[3:], dtype=pair.dtype, **pair.kwargs).call(x))


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
    x = grade.randn(2, 5, 6, dtype=torch.float64, scale=100.0)
    diagnose.unstable_unless_named(lambda: causal_same(grade, pair, x))


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


# (d_in, d_out, context_length, B, T, dtype): d_in >= T one-hot tokens, d_out = 2T (grader/dropout.py)
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
    expect_dropout_on_weights(grade, pair, tokens=tokens, p=0.5, batch=batch,
                              eval_same=lambda x: causal_same(grade, pair, x))


@exercise("CausalAttention")
def test_causal_attention_dropout_one_drops_every_weight(grade):
    """p = 1: every weight dropped, a zero output (nn.Dropout's; a mask scaled by 1/(1-p) gives NaN)."""
    pair = grade.module("CausalAttention", 5, 10, 5, 1.0)
    expect_dropout_on_weights(grade, pair, tokens=5, p=1.0, eval_same=lambda x: causal_same(grade, pair, x))


@exercise("CausalAttention", weight=3)
def test_causal_attention_eval_is_deterministic(grade):
    pair = grade.module("CausalAttention", 5, 4, 7, 0.5).train(False)
    x = grade.randn(2, 7, 5)
    try:
        first = pair.call(x, seed=1).out
        second = pair.call(x, seed=2).out
    except (StudentFault, CheckFailed):
        causal_same(grade, pair, x, seed=3)  # the raise judged there: the causal_mask's, when it raises so too
        raise
    grade.expect_close(second, first, "in eval mode, CausalAttention(dropout=0.5) gave different outputs on two "
                       "calls with the same input: dropout must be off outside training", ("dropout-in-eval",))
    causal_same(grade, pair, x, seed=3)


@exercise("CausalAttention", weight=1)
def test_causal_attention_structure(grade):
    """An nn.Dropout named dropout and the causal mask as a buffer, read from the module the student's
    process built; the point comes with a right output only (the eval-mode forward on the lesson batch)."""
    pair = grade.module("CausalAttention", 3, 2, 6, 0.1)
    causal_same(grade, pair.train(False), journey_batch())
    kind = pair.state["modules"].get("dropout")
    if kind != "Dropout":
        raise CheckFailed(f"CausalAttention should have an nn.Dropout named 'dropout', but 'dropout' is "
                          f"{'missing' if kind is None else 'a ' + kind}")
    expected = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    masks = [b for b in pair.state["buffers"].values() if tuple(b.shape) == (6, 6)]
    if any(torch.equal(b != 0, expected) for b in masks):
        return
    failure = CheckFailed("CausalAttention should register its causal mask as a buffer "
                          "(self.register_buffer(...)) of shape [context_length, context_length], "
                          "True (or 1) strictly above the diagonal")
    theirs = diagnose.their(grade, "causal_mask", 6)  # the student's own helper may have made the buffer
    if isinstance(theirs, torch.Tensor) and tuple(theirs.shape) == (6, 6) and not grade.replaying \
            and not torch.equal(theirs != 0, expected) and any(torch.equal(b != 0, theirs != 0) for b in masks):
        raise diagnose.helper_at_fault(grade, failure, "causal_mask", "it does not give True strictly above "
                                       "the diagonal") from None
    raise failure


# --- half precision, on CUDA ------------------------------------------------------------------------
@exercise("apply_causal_mask")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_apply_causal_mask_half_precision(grade, dtype):
    grade.needs_cuda()
    grade.same_low_precision("apply_causal_mask", grade.randn(2, 7, 7), dtype=dtype)
