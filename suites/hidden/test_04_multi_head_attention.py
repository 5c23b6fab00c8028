"""Hidden grading suite for 04_multi_head_attention. Never shipped to students.

Every check compares the student's function or module with the reference on the same inputs (see
grader/harness.py); modules get the reference's weights by parameter name. Inputs come from the
check's own seed, fresh each run unless --seed is given. When an output is wrong, a few known
mistakes are recomputed here with the reference's weights so that the feedback can name the one
the student made (the misconception ids of the course spec).
"""
import itertools

import pytest
import torch

from grader import diagnose
from grader.authoring import Mistake, ScaleSearch, assignment, exercise
from grader.compare import manual_seed
from grader.dropout import expect_dropout_on_weights
from grader.harness import CheckFailed, StudentFault
from grader.outcomes import RaisedFailure
from lesson import journey_batch, mistaken

pytestmark = assignment("04_multi_head_attention")

# softmax is allowed here: the lesson builds multi-head attention from plain torch operations.

F32, F64 = torch.float32, torch.float64


# --- naming the mistake ------------------------------------------------------------------------------
def matches(misconception, what, output) -> Mistake:
    """A mistake whose output the student's matches: "your output matches <what>"."""
    return Mistake(misconception, f"your output matches {what}", output)


# --- split_heads -------------------------------------------------------------------------------------
def _split_without_transpose(x, heads):
    batch, tokens, dim = x.shape
    return x.reshape(batch, heads, tokens, dim // heads)


def split_heads_same(grade, x, heads, grad=False):
    grade.same("split_heads", x, heads, grad=grad, mistakes=[
        matches("heads-split-without-transpose", "x.view(B, H, T, D/H) taken straight from [B, T, D]: the features "
                "of one head must stay together, so reshape to [B, T, H, D/H] and then transpose(1, 2)",
                lambda: _split_without_transpose(x, heads))])


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
def _merge_without_transpose(x):
    batch, heads, tokens, head_dim = x.shape
    return x.reshape(batch, tokens, heads * head_dim)


def merge_heads_same(grade, x, grad=False):
    grade.same("merge_heads", x, grad=grad, mistakes=[
        matches("heads-merged-without-transpose", "x.reshape(B, T, H*hd) taken straight from [B, H, T, hd]: "
                "transpose(1, 2) to [B, T, H, hd] first", lambda: _merge_without_transpose(x))])


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
def split_qkv_same(grade, qkv, heads):
    batch, tokens, three_dim = qkv.shape
    head_dim = three_dim // (3 * heads)

    def parts():
        return tuple(qkv.reshape(batch, tokens, 3, heads, head_dim).permute(2, 0, 3, 1, 4))

    grade.same("split_qkv", qkv, heads, right=lambda: parts(), mistakes=[
        matches(None, "the layout reshape(B, T, H, 3, D/H) (q, k and v interleaved per head); the fused layout is "
                "reshape(B, T, 3, H, D/H).permute(2, 0, 3, 1, 4)",
                lambda: tuple(qkv.reshape(batch, tokens, heads, 3, head_dim).permute(3, 0, 2, 1, 4))),
        *(matches("qkv-swapped", "q, k, v taken from the fused tensor in the order "
                  f"{', '.join('qkv'[i] for i in order)}", lambda order=order: tuple(parts()[i] for i in order))
          for order in itertools.permutations(range(3)) if order != (0, 1, 2)),
        matches("heads-split-without-transpose", "each of q, k, v reshaped straight to [B, H, T, hd]: reshape to "
                "[B, T, H, hd] first, then transpose(1, 2)",
                lambda: tuple(p.reshape(batch, heads, tokens, head_dim)
                              for p in qkv.reshape(batch, tokens, 3, heads * head_dim).unbind(2)))])


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


# --- modules: helpers ---------------------------------------------------------------------------------
def module_same(grade, pair, x, *, grad=False, seed=None, candidates=(), right=None, root_cause=None):
    """The module's output matches the reference's; if not, the candidate ``(misconception, what,
    make(x, seed))`` that explains it is named. ``right(x, seed)`` recomputes the right output;
    ``root_cause(pair, x, seed)`` gives diagnose.diagnosed's root_cause (a helper to blame)."""
    return pair.same(x, grad=grad, seed=seed,
                     mistakes=[matches(m, what, lambda make=make: make(x.to(grade.device), seed))
                               for m, what, make in candidates],
                     right=None if right is None else (lambda: right(x.to(grade.device), seed)),
                     root_cause=None if root_cause is None else root_cause(grade, pair, x, seed))


def causal_module_check(grade, name, args, kwargs, x, check):
    """Run ``check``; if the student's causal module ``name(*args, **kwargs)`` (args: d_in, d_out,
    context_length, dropout, num_heads) crashes on ``x`` with fewer tokens than context_length but runs
    with context_length = T, say that the mask was not truncated."""
    d_in, d_out, context, _, heads = args
    try:
        return check()
    except StudentFault as fault:
        raise diagnose.not_truncated(fault, x.shape[1], context, lambda: grade.module(
            name, d_in, d_out, x.shape[1], 0.0, heads, **kwargs).call(x)) from None


def random_module_check(grade, name, diagnosis, d_in, d_out, context, heads, batch, tokens, bias, dtype):
    """Random weights and inputs, gradients included; ``diagnosis``: (mistakes(pair), right(pair))."""
    mistakes, right, root_cause = diagnosis
    args, kwargs = (d_in, d_out, context, 0.0, heads), {"qkv_bias": bias, "dtype": dtype}
    pair = grade.module(name, *args, **kwargs)
    x = grade.randn(batch, tokens, d_in, dtype=dtype)
    causal_module_check(grade, name, args, kwargs, x,
                        lambda: module_same(grade, pair, x, grad=True, candidates=mistakes(pair), right=right(pair),
                                            root_cause=root_cause))


def expect_deterministic_eval(grade, pair, x, root_cause=None):
    """In eval mode the output is the reference's (no dropout), and the same on every call
    (``root_cause`` as for module_same: the student's own helper, when the output is right given it)."""
    pair.train(False)

    def same():
        if root_cause is None:
            pair.same(x)
        else:
            module_same(grade, pair, x, root_cause=root_cause)

    try:
        first = pair.call(x).out
        second = pair.call(x).out
    except (StudentFault, CheckFailed):
        same()  # the raise judged there: a helper's, when the right computation raises so on its result
        raise
    if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape \
            and not torch.equal(first.nan_to_num(), second.nan_to_num()):  # NaN twice is no dropout
        raise CheckFailed(f"{pair.what}: in eval mode two calls on the same input gave different outputs; "
                          "dropout must only act in training mode", ("dropout-in-eval",))
    same()


# --- MultiHeadAttentionWrapper ------------------------------------------------------------------------
WRAPPER = "MultiHeadAttentionWrapper"


def _attention(ref, q, k, v, seed, scale, *, causal="future", **changes):
    """Causal attention of one head (or of [B, H, T, hd] heads) with ``ref``'s dropout, with ``changes``
    to mistaken.attend's arguments, and the causal mask ``causal`` (mistaken.causal_variants, or None)."""
    masks = mistaken.causal_variants(q.shape[-2], k.shape[-2], q.device)
    settings = dict(scale=scale, hidden=masks.get(causal), dropout=ref.dropout if ref.training else None, seed=seed)
    settings.update(changes)
    return mistaken.attend(q, k, v, **settings)


def _wrapper_variant(ref, x, seed, *, order=1, scaled=True, scale=None, **changes):
    """The reference wrapper with one thing changed, computed from its heads' weights (``scale``: a
    number that multiplies the scores)."""
    outputs = []
    if seed is not None:
        manual_seed(seed)
    for head in list(ref.heads)[::order]:
        q, k, v = head.W_query(x), head.W_key(x), head.W_value(x)
        multiplier = scale if scale is not None else k.shape[-1] ** -0.5 if scaled else 1.0
        outputs.append(_attention(head, q, k, v, None, multiplier, **changes))
    return torch.cat(outputs, dim=-1)


# attention's usual mistakes, as changes to _attention's arguments
ATTENTION_MISTAKES = (
    ("mask-not-applied", "attention without the causal mask: every token sees the future", {"causal": None}),
    ("mask-inverted", "the past hidden instead of the future", {"causal": "past"}),
    ("mask-inverted", "the past and the token itself hidden, and the future shown", {"causal": "past-and-diagonal"}),
    ("mask-hides-diagonal", "the diagonal hidden too: a token may attend to itself",
     {"causal": "future-and-diagonal"}),
    ("mask-after-softmax-not-renormalized", "the future zeroed after the softmax without renormalising",
     {"mask": "after"}),
    ("softmax-wrong-dim", "a softmax over the queries, not the keys", {"dim": -2}),
    ("softmax-wrong-dim", "a softmax over the first dimension, not the keys", {"dim": 0}),
    ("softmax-wrong-dim", "a softmax over the second dimension (the heads, or the queries of one head), not the "
                          "keys", {"dim": 1}),
    ("scores-transposed", "scores K Qᵀ in place of Q Kᵀ", {"transposed": True}),
    ("dropout-on-scores", "dropout on the scores before the softmax; it belongs on the weights after it",
     {"dropout_on": "scores"}),
    ("dropout-on-scores", "dropout on the scores before the mask and the softmax; it belongs on the weights",
     {"dropout_on": "raw-scores"}),
)
# mistakes that leave a softmax with nothing visible (a row, or the heads at a hidden position), for the
# other ways code treats that: NaN from torch.softmax, uniform weights from a large negative fill
ATTENTION_MISTAKES += tuple((m, what, {**changes, "rows": rows}) for rows in mistaken.HIDDEN_ROWS[1:]
                            for m, what, changes in ATTENTION_MISTAKES if "causal" in changes or "dim" in changes)

WRAPPER_MISTAKES = ATTENTION_MISTAKES + (
    ("missing-scale", "unscaled scores: divide by sqrt(d_out) of a head", {"scaled": False}),
    (None, "the heads concatenated in reverse order: head 0's features come first", {"order": -1}),
)


def wrapper_mistakes(pair):
    def scale_fit(x, s):  # the reference is reached only when a check failed (never while replaying)
        head_dim = pair.ref.heads[0].W_key.out_features
        return ScaleSearch(lambda c: _wrapper_variant(pair.ref, x, s, scale=c), head_dim ** -0.5)

    return [(m, d, (lambda x, s, flags=flags: _wrapper_variant(pair.ref, x, s, **flags)))
            for m, d, flags in WRAPPER_MISTAKES] + [(None, "", scale_fit)]


def wrapper_right(pair):
    return lambda x, s: _wrapper_variant(pair.ref, x, s)


def heads_root_cause(grade, pair, x, seed):
    """Blame the student's CausalAttention (assignment 03) when the wrapper's output is what the
    student's own CausalAttention gives, head by head, with the wrapper's weights."""
    def blame(failure, out):
        if pair.ref.training and pair.ref.heads[0].dropout.p > 0:
            return None  # the heads draw their dropout masks in turn; one by one they would draw others
        theirs = []
        try:
            other = pair.grade.sibling("03_causal_attention")
            for head in pair.ref.heads:
                single = other.module("CausalAttention", head.W_query.in_features, head.W_query.out_features,
                                      head.mask.shape[0], head.dropout.p, head.W_query.bias is not None,
                                      dtype=pair.dtype)
                single.use_weights_of(head)  # the wrapper's weights for this head
                theirs.append(single.train(head.training).call(x).out)
        except (StudentFault, CheckFailed, KeyError):
            return None
        xd = x.to(grade.device)
        with torch.no_grad():
            right = _wrapper_variant(pair.ref, xd, seed)
        if not all(isinstance(t, torch.Tensor) and t.shape == theirs[0].shape for t in theirs) \
                or sum(t.numel() for t in theirs) > right.numel():  # never a concatenation larger than the answer
            return None
        return diagnose.blame(grade, failure, out, "CausalAttention (assignment 03)", torch.cat(theirs, dim=-1),
                              right, lambda h: h, [(m, f"your CausalAttention gives {what}", lambda make=make: make(xd, seed))
                                                   for m, what, make in wrapper_mistakes(pair)])
    return blame


@exercise(WRAPPER, weight=2)
def test_wrapper_lesson_data(grade):
    pair = grade.module(WRAPPER, 3, 2, 6, 0.0, num_heads=2)
    module_same(grade, pair, journey_batch(), candidates=wrapper_mistakes(pair), right=wrapper_right(pair),
                root_cause=heads_root_cause)


@exercise(WRAPPER, weight=2)
@pytest.mark.parametrize("d_in,d_out,context,heads,batch,tokens,bias,dtype", [
    pytest.param(5, 3, 8, 3, 2, 8, False, F32, id="H3-din5-dout3-T8-float32"),
    pytest.param(4, 6, 16, 2, 3, 11, True, F64, id="bias-T11-of-16-float64"),
    pytest.param(4, 2, 8, 1, 2, 1, False, F32, id="H1-T1-float32"),
])
def test_wrapper_random(grade, d_in, d_out, context, heads, batch, tokens, bias, dtype):
    random_module_check(grade, WRAPPER, (wrapper_mistakes, wrapper_right, heads_root_cause), d_in, d_out, context, heads, batch, tokens,
                        bias, dtype)


@exercise(WRAPPER, weight=2)
def test_wrapper_dropout(grade):
    """Eval: no dropout and deterministic; training: dropout on each head's weights, as the reference."""
    args = (4, 3, 10, 0.5, 2)
    pair = grade.module(WRAPPER, *args)
    x = grade.randn(2, 7, 4)

    causal_module_check(grade, WRAPPER, args, {}, x, lambda: expect_deterministic_eval(grade, pair, x, heads_root_cause))


@exercise(WRAPPER, weight=2)
def test_wrapper_dropout_on_each_heads_weights(grade):
    """Dropout by its effect (grader/dropout.py): two heads of 2T = 12 features on T = 6 one-hot tokens."""
    pair = grade.module(WRAPPER, 6, 12, 8, 0.5, 2)
    expect_dropout_on_weights(grade, pair, tokens=6, p=0.5, eval_same=lambda x: module_same(
        grade, pair, x, candidates=wrapper_mistakes(pair), right=wrapper_right(pair), root_cause=heads_root_cause))


# --- MultiHeadAttention -------------------------------------------------------------------------------
MHA = "MultiHeadAttention"


def _mha_variant(ref, x, seed, *, scale="head", split_transpose=True, merge_transpose=True, out_proj=True,
                 roles=mistaken.ROLES, **changes):
    """The reference MultiHeadAttention with one thing changed, computed from its weights."""
    batch, tokens, _ = x.shape
    heads = ref.num_heads
    d_out = ref.out_proj.in_features
    head_dim = d_out // heads

    def split(t):
        if split_transpose:
            return t.reshape(batch, tokens, heads, head_dim).transpose(1, 2)
        return t.reshape(batch, heads, tokens, head_dim)

    projected = {"query": ref.W_query(x), "key": ref.W_key(x), "value": ref.W_value(x)}
    q, k, v = (split(projected[role]) for role in roles)
    if isinstance(scale, str):  # the scale named, or a number that multiplies the scores
        scale = 1.0 / {"head": head_dim ** 0.5, "model": d_out ** 0.5, "head-not-sqrt": float(head_dim), "none": 1.0,
                       "multiplied": head_dim ** -0.5}[scale]
    context = _attention(ref, q, k, v, seed, scale, **changes)
    if merge_transpose:
        context = context.transpose(1, 2).reshape(batch, tokens, d_out)
    else:
        context = context.reshape(batch, tokens, d_out)
    return ref.out_proj(context) if out_proj else context


MHA_MISTAKES = ATTENTION_MISTAKES + (
    ("wrong-scale", "scores scaled by 1/sqrt(d_out), the model width; use the head size d_out/num_heads",
     {"scale": "model"}),
    ("wrong-scale", "scores divided by head_dim instead of sqrt(head_dim)", {"scale": "head-not-sqrt"}),
    ("wrong-scale", "scores multiplied by sqrt(head_dim) instead of divided", {"scale": "multiplied"}),
    ("missing-scale", "unscaled scores: divide by sqrt(head_dim)", {"scale": "none"}),
    ("heads-split-without-transpose", "heads split with view(B, H, T, hd) straight from [B, T, d_out]",
     {"split_transpose": False}),
    ("heads-merged-without-transpose", "heads merged back without transposing [B, H, T, hd] to [B, T, H, hd]",
     {"merge_transpose": False}),
    ("out-proj-missing", "the heads' context without the output projection out_proj", {"out_proj": False}),
) + tuple((m, what.removeprefix("your "), {"roles": roles}) for roles, (m, what) in mistaken.wrong_roles())


def mha_mistakes(pair):
    def scale_fit(x, s):  # the reference is reached only when a check failed (never while replaying)
        head_dim = pair.ref.out_proj.in_features // pair.ref.num_heads
        return ScaleSearch(lambda c: _mha_variant(pair.ref, x, s, scale=c), head_dim ** -0.5, "1/sqrt(head_dim)")

    return [(m, d, (lambda x, s, flags=flags: _mha_variant(pair.ref, x, s, **flags)))
            for m, d, flags in MHA_MISTAKES] + [(None, "", scale_fit)]


def mha_right(pair):
    return lambda x, s: _mha_variant(pair.ref, x, s)


def split_merge_root_cause(grade, pair, x, seed):
    """Blame the student's split_heads or merge_heads when the module's output is what they give,
    used on the right projections (split) or on the right attention output (merge)."""
    def blame(failure, out):
        ref = pair.ref
        batch, tokens, _ = x.shape
        heads, d_out = ref.num_heads, ref.out_proj.in_features
        with torch.no_grad():
            xd = x.to(grade.device)
            projected = torch.stack([ref.W_query(xd), ref.W_key(xd), ref.W_value(xd)])  # [3, B, T, D]
            split = projected.reshape(3, batch, tokens, heads, d_out // heads).transpose(2, 3)
            context = _attention(ref, *split, seed, (d_out // heads) ** -0.5)  # [B, H, T, hd]

            def attend_and_merge(parts):
                attended = _attention(ref, *parts, seed, (d_out // heads) ** -0.5)
                return ref.out_proj(attended.transpose(1, 2).reshape(batch, tokens, d_out))

            theirs = [diagnose.their(grade, "split_heads", p.cpu(), heads) for p in projected]
            raised = next((t for t in theirs if isinstance(t, diagnose.Raised)), None)
            if raised or all(diagnose.within(t, split[0]) and t.shape == theirs[0].shape for t in theirs):
                blamed = diagnose.blame(grade, failure, out, "split_heads", raised or torch.stack(theirs), split,
                                        attend_and_merge,
                                        [("heads-split-without-transpose", "it reshapes straight to [B, H, T, hd]",
                                          lambda: projected.reshape(3, batch, heads, tokens, d_out // heads))])
                if blamed:
                    return blamed
            return diagnose.blame(grade, failure, out, "merge_heads", diagnose.their(grade, "merge_heads", context.cpu()),
                                  context.transpose(1, 2).reshape(batch, tokens, d_out), ref.out_proj,
                                  [("heads-merged-without-transpose", "it reshapes straight from [B, H, T, hd]",
                                    lambda: context.reshape(batch, tokens, d_out))])
    return blame


@exercise(MHA, weight=2)
def test_mha_lesson_data(grade):
    pair = grade.module(MHA, 3, 2, 6, 0.0, num_heads=2)
    module_same(grade, pair, journey_batch(), grad=True, candidates=mha_mistakes(pair), right=mha_right(pair),
                root_cause=split_merge_root_cause)


@exercise(MHA, weight=2)
@pytest.mark.parametrize("d_in,d_out,context,heads,batch,tokens,bias,dtype", [
    pytest.param(6, 8, 12, 4, 2, 12, False, F32, id="H4-din6-dout8-T12-float32"),
    pytest.param(4, 6, 32, 2, 3, 9, True, F64, id="H2-bias-T9-of-32-float64"),
    pytest.param(5, 4, 8, 1, 2, 1, False, F32, id="H1-T1-float32"),
    pytest.param(8, 8, 128, 2, 1, 100, True, F32, id="long-T100-float32"),
])
def test_mha_random(grade, d_in, d_out, context, heads, batch, tokens, bias, dtype):
    random_module_check(grade, MHA, (mha_mistakes, mha_right, split_merge_root_cause), d_in, d_out, context, heads, batch, tokens, bias, dtype)


@exercise(MHA)
def test_mha_non_contiguous(grade):
    pair = grade.module(MHA, 6, 6, 10, 0.0, 3)
    module_same(grade, pair, grade.randn(10, 2, 6).transpose(0, 1), candidates=mha_mistakes(pair),
                right=mha_right(pair), root_cause=split_merge_root_cause)


@exercise(MHA)
def test_mha_large_scores(grade):
    """Scores in the thousands, past where a float64 exp overflows: the output is still finite and right
    (float64 throughout, so that the rounding of so large scores stays far below the tolerance)."""
    pair = grade.module(MHA, 6, 6, 10, 0.0, 3, dtype=F64)
    diagnose.unstable_unless_named(lambda: module_same(
        grade, pair, grade.randn(2, 5, 6, dtype=F64, scale=100.0), candidates=mha_mistakes(pair), right=mha_right(pair),
        root_cause=split_merge_root_cause))


@exercise(MHA, weight=2)
def test_mha_indivisible_raises(grade):
    grade.raises(("ValueError", "AssertionError"), MHA, 3, 4, 6, 0.0, 3, new=True)


@exercise(MHA, weight=2)
def test_mha_eval_is_deterministic(grade):
    args = (4, 6, 10, 0.5, 2)
    pair, x = grade.module(MHA, *args), grade.randn(2, 8, 4)
    causal_module_check(grade, MHA, args, {}, x,
                        lambda: expect_deterministic_eval(grade, pair, x, split_merge_root_cause))


@exercise(MHA, weight=2)
def test_mha_dropout_on_weights(grade):
    """Dropout by its effect (grader/dropout.py): heads of 2T = 12 features on T = 6 one-hot tokens."""
    pair = grade.module(MHA, 6, 24, 8, 0.5, 2)
    expect_dropout_on_weights(grade, pair, tokens=6, p=0.5, eval_same=lambda x: module_same(
        grade, pair, x, candidates=mha_mistakes(pair), right=mha_right(pair), root_cause=split_merge_root_cause))


@exercise(MHA, weight=2)
def test_mha_vectorised(grade):
    args = (4, 4, 32, 0.0, 2)
    pair, x = grade.module(MHA, *args), grade.randn(1, 4, 4)
    x_long = grade.randn(1, 32, 4)
    short = causal_module_check(grade, MHA, args, {}, x, lambda: pair.measured(
        x, root_cause=split_merge_root_cause(grade, pair, x, None))).ops
    long = pair.measured(x_long, root_cause=split_merge_root_cause(grade, pair, x_long, None)).ops
    grade.expect_not_growing(MHA, short, long)


# --- FusedQKVAttention --------------------------------------------------------------------------------
FUSED = "FusedQKVAttention"


def _fused_parts(ref, x, *, transpose=True):
    """The reference's q, k, v, stacked: [3, B, H, N, hd]; ``transpose=False``: each of them reshaped
    straight from [B, N, chan] to [B, H, N, hd] (heads-split-without-transpose)."""
    batch, tokens, _ = x.shape
    chan = ref.proj.in_features
    heads = ref.num_heads
    if not transpose:
        return ref.qkv(x).reshape(batch, tokens, 3, chan).permute(2, 0, 1, 3).reshape(3, batch, heads, tokens,
                                                                                        chan // heads)
    return ref.qkv(x).reshape(batch, tokens, 3, heads, chan // heads).permute(2, 0, 3, 1, 4)


def _fused_variant(ref, x, *, scale=None, skip=True, causal=False, proj=True, merge_transpose=True,
                   skip_transpose=None, order=(0, 1, 2), parts=None, split_transpose=True, **changes):
    """The reference FusedQKVAttention with one thing changed, computed from its weights (``parts``:
    q, k, v stacked, in place of the reference's split; ``skip_transpose``: how v is merged for the
    skip connection, when not as the attended heads are)."""
    batch, tokens, _ = x.shape
    chan = ref.proj.in_features
    parts = _fused_parts(ref, x, transpose=split_transpose) if parts is None else parts
    q, k, v = (parts[i] for i in order)
    hidden = mistaken.causal_variants(tokens, tokens, x.device)["future"] if causal else None
    attended = mistaken.attend(q, k, v, scale=ref.scale if scale is None else scale, hidden=hidden, **changes)

    def merge(t, transpose=merge_transpose):
        return (t.transpose(1, 2) if transpose else t).reshape(batch, tokens, chan)

    out = ref.proj(merge(attended)) if proj else merge(attended)
    return out + merge(v, merge_transpose if skip_transpose is None else skip_transpose) if skip else out


def fused_mistakes(pair, qk_scale):
    ref = pair.ref
    chan = ref.proj.in_features
    changes = [
        (None, "proj(attention) without the skip connection: add v, merged back to [B, N, chan]", {"skip": False}),
        (None, "causal attention; FusedQKVAttention is not causal", {"causal": True}),
        ("missing-scale", "unscaled scores", {"scale": 1.0}),
        ("wrong-scale", "scores scaled by chan**-0.5, the model width; use the head size chan/num_heads",
         {"scale": chan ** -0.5}),
        ("wrong-scale", "scores multiplied by sqrt(head_dim), not divided", {"scale": 1.0 / ref.scale}),
        ("out-proj-missing", "the attention merged back without the output projection proj", {"proj": False}),
        ("heads-merged-without-transpose", "heads merged back without transposing [B, H, N, hd] to [B, N, H, hd]",
         {"merge_transpose": False}),
        ("heads-merged-without-transpose", "the attended heads merged back without transposing [B, H, N, hd] to "
         "[B, N, H, hd] (v, for the skip connection, is merged right)", {"merge_transpose": False, "skip_transpose": True}),
        ("heads-merged-without-transpose", "v merged back for the skip connection without transposing [B, H, N, hd] "
         "to [B, N, H, hd] (the attended heads are merged right)", {"skip_transpose": False}),
        ("heads-split-without-transpose", "q, k and v reshaped straight from [B, N, chan] to [B, H, N, hd]: "
         "reshape to [B, N, H, hd] and transpose the token and head axes", {"split_transpose": False}),
        ("softmax-wrong-dim", "a softmax over the queries, not the keys", {"dim": -2}),
        ("scores-transposed", "scores K Qᵀ in place of Q Kᵀ", {"transposed": True}),
    ] + [("qkv-swapped", f"q, k, v taken from the fused projection in the order {', '.join('qkv'[i] for i in order)}",
          {"order": order}) for order in itertools.permutations(range(3)) if order not in ((0, 1, 2), (1, 0, 2))]
    if qk_scale is not None:
        changes.append(("wrong-scale", "the default scale head_dim**-0.5 although qk_scale was given",
                        {"scale": (chan // ref.num_heads) ** -0.5}))
    return [(m, d, (lambda x, s, flags=flags: _fused_variant(ref, x, **flags))) for m, d, flags in changes] + [
        (None, "", lambda x, s: ScaleSearch(lambda c: _fused_variant(ref, x, scale=c), ref.scale,
                                                      "qk_scale or head_dim**-0.5"))]


def fused_right(pair):
    return lambda x, s: _fused_variant(pair.ref, x)


def fused_root_cause(grade, pair, x, seed):
    """Blame the student's split_qkv or merge_heads when the module's output is what they give, on the
    right fused projection (split) or on the right attention output and v (merge)."""
    def blame(failure, out):
        ref = pair.ref
        batch, tokens, _ = x.shape
        chan = ref.proj.in_features
        with torch.no_grad():
            xd = x.to(grade.device)
            parts = _fused_parts(ref, xd)
            theirs = diagnose.their(grade, "split_qkv", ref.qkv(xd).cpu(), ref.num_heads)
            if isinstance(theirs, tuple) and len(theirs) == 3 and all(diagnose.within(t, parts[0]) for t in theirs) \
                    and len({t.shape for t in theirs}) == 1:
                blamed = diagnose.blame(
                    grade, failure, out, "split_qkv", torch.stack(theirs), parts,
                    lambda split: _fused_variant(ref, xd, parts=split),
                    [("qkv-swapped", f"it returns them in the order {', '.join('qkv'[i] for i in order)}",
                      lambda order=order: parts[list(order)])
                     for order in itertools.permutations(range(3)) if order != (0, 1, 2)])
                if blamed:
                    return blamed
            attended = mistaken.attend(parts[0], parts[1], parts[2], scale=ref.scale)
            both = torch.stack((attended, parts[2]))  # merged: proj(first) + second
            # a raise is tried as the module met it, on heads that autograd tracks (an in-place transpose_
            # of them raises there, not on a plain tensor)
            tracked = ({"grad_out": torch.ones(batch, tokens, chan), "grad_args": [0]}
                       if isinstance(failure, RaisedFailure) else {})
            theirs = [diagnose.their(grade, "merge_heads", t.cpu(), **tracked) for t in both]
            raised = next((t for t in theirs if isinstance(t, diagnose.Raised)), None)
            right = both.transpose(2, 3).reshape(2, batch, tokens, chan)  # [2, B, N, C]
            if raised is None and not all(diagnose.within(t, right[0]) and t.shape == theirs[0].shape for t in theirs):
                return None
            return diagnose.blame(grade, failure, out, "merge_heads", raised or torch.stack(theirs), right,
                                  lambda merged: ref.proj(merged[0]) + merged[1],
                                  [("heads-merged-without-transpose", "it reshapes straight from [B, H, N, hd]",
                                    lambda: both.reshape(2, batch, tokens, chan))])
    return blame


@exercise(FUSED)
def test_fused_lesson_data(grade):
    pair = grade.module(FUSED, 3, 4, num_heads=2)
    module_same(grade, pair, journey_batch(), candidates=fused_mistakes(pair, None), right=fused_right(pair),
                root_cause=fused_root_cause)


@exercise(FUSED)
def test_fused_large_scores(grade):
    """As test_mha_large_scores, for the fused projection."""
    pair = grade.module(FUSED, 6, 8, num_heads=4, qk_scale=0.7, dtype=F64)
    diagnose.unstable_unless_named(lambda: module_same(
        grade, pair, grade.randn(2, 5, 6, dtype=F64, scale=100.0), candidates=fused_mistakes(pair, 0.7),
        right=fused_right(pair), root_cause=fused_root_cause))


@exercise(FUSED, weight=2)
@pytest.mark.parametrize("dim,chan,heads,bias,qk_scale,batch,tokens,dtype", [
    pytest.param(6, 8, 2, False, None, 2, 5, F32, id="H2-dim6-chan8-float32"),
    pytest.param(4, 12, 3, True, 0.3, 1, 7, F64, id="H3-bias-qk_scale-float64"),
    pytest.param(5, 4, 1, False, None, 2, 1, F32, id="H1-N1-float32"),
    pytest.param(8, 16, 4, True, None, 1, 64, F32, id="long-N64-bias-float32"),
])
def test_fused_random(grade, dim, chan, heads, bias, qk_scale, batch, tokens, dtype):
    pair = grade.module(FUSED, dim, chan, num_heads=heads, qkv_bias=bias, qk_scale=qk_scale, dtype=dtype)
    module_same(grade, pair, grade.randn(batch, tokens, dim, dtype=dtype), grad=True,
                candidates=fused_mistakes(pair, qk_scale), right=fused_right(pair), root_cause=fused_root_cause)


@exercise(FUSED)
def test_fused_non_contiguous(grade):
    pair = grade.module(FUSED, 6, 8, num_heads=4, qk_scale=0.7)
    module_same(grade, pair, grade.randn(9, 2, 6).transpose(0, 1), candidates=fused_mistakes(pair, 0.7),
                right=fused_right(pair), root_cause=fused_root_cause)


@exercise(FUSED, weight=2)
def test_fused_indivisible_raises(grade):
    grade.raises(("ValueError", "AssertionError"), FUSED, 4, 6, 4, new=True)


@exercise(FUSED, weight=2)
def test_fused_vectorised(grade):
    pair = grade.module(FUSED, 4, 4, num_heads=2)
    x_short, x_long = grade.randn(1, 4, 4), grade.randn(1, 32, 4)
    short = pair.measured(x_short, root_cause=fused_root_cause(grade, pair, x_short, None)).ops
    long = pair.measured(x_long, root_cause=fused_root_cause(grade, pair, x_long, None)).ops
    grade.expect_not_growing(FUSED, short, long)
