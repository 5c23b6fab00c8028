"""How 04_multi_head_attention's checks judge and diagnose, shared by its hidden and its public suite.

The same functions grade the instructor's fresh cases and the student's fixed ones, so that a file
gets the same verdict on both sides: the same mistakes named, the same helper forgiven ("right,
given your split_heads"). Nothing here reads the reference: the known mistakes are recomputed with
the lesson's formulas (lesson.mistaken) from the weights a module pair holds (``pair.weights``, the
reference's, loaded into the student's instance too) and from the student's own helpers, so that a
replayed run (a student distribution, which has no reference) diagnoses as live grading does.
Diagnoses recompute attention without dropout: the checks that diagnose run without dropout or in
evaluation mode.
"""
from __future__ import annotations

import itertools

import torch

from grader.authoring import (CheckFailed, GradientFailure, Mistake, RaisedFailure, RightGivenHelper, StudentFault,
                              UsageError, diagnose, model, shape_mismatch, shape_str)
from lesson import LAYOUT_OPS, VECTORISED, lengthened, mistaken, vectorised_on
from lesson.dropout import expect_dropout_on_weights, judged, one_hot
from lesson.mistaken import ScaleSearch
from lesson.checks_03 import student_module
from lesson.mistaken import linear

WRAPPER, MHA, FUSED = "MultiHeadAttentionWrapper", "MultiHeadAttention", "FusedQKVAttention"


def matches(misconception, what, output) -> Mistake:
    """A known mistake, named when the student's output is its output ("your output matches <what>")."""
    return Mistake(misconception, f"your output matches {what}", output)


# --- split_heads, merge_heads, split_qkv ----------------------------------------------------------------
@model
def strided(x, dims):
    """``x`` with the dimensions ``dims`` swapped: a view, not contiguous (a check's strided input)."""
    return x.transpose(*dims)


@model
def split_without_transpose(x, heads):
    batch, tokens, dim = x.shape
    return x.reshape(batch, heads, tokens, dim // heads)


def split_heads_same(grade, x, heads, grad=False):
    grade.same("split_heads", x, heads, grad=grad, mistakes=[
        matches("heads-split-without-transpose", "x.view(B, H, T, D/H) taken straight from [B, T, D]: the features "
                "of one head must stay together, so reshape to [B, T, H, D/H] and then transpose(1, 2)",
                lambda: split_without_transpose(x, heads)),
        Mistake(None, "your heads come out as [B, T, H, D/H]: reshaped, but not transposed; the heads go before the "
                "tokens, [B, H, T, D/H]: add .transpose(1, 2)",
                lambda: split_not_transposed(x, heads))])


@model
def split_not_transposed(x, heads):
    """``x`` [B, T, D] reshaped to [B, T, H, D/H] and left so (heads not moved before the tokens)."""
    return x.reshape(*x.shape[:-1], heads, x.shape[-1] // heads)


@model
def merge_without_transpose(x):
    batch, heads, tokens, head_dim = x.shape
    return x.reshape(batch, tokens, heads * head_dim)


def merge_heads_same(grade, x, grad=False):
    grade.same("merge_heads", x, grad=grad, mistakes=[
        matches("heads-merged-without-transpose", "x.reshape(B, T, H*hd) taken straight from [B, H, T, hd]: "
                "transpose(1, 2) to [B, T, H, hd] first", lambda: merge_without_transpose(x))])


def split_qkv_same(grade, qkv, heads):
    def parts():
        return qkv_parts(qkv, heads)

    grade.same("split_qkv", qkv, heads, right=lambda: parts(), mistakes=[
        matches(None, "the layout reshape(B, T, H, 3, D/H) (q, k and v interleaved per head); the fused layout is "
                "reshape(B, T, 3, H, D/H).permute(2, 0, 3, 1, 4)",
                lambda: qkv_parts_per_head(qkv, heads)),
        *(matches("qkv-swapped", "q, k, v taken from the fused tensor in the order "
                  f"{', '.join('qkv'[i] for i in order)}", lambda order=order: tuple(parts()[i] for i in order))
          for order in itertools.permutations(range(3)) if order != (0, 1, 2)),
        matches("heads-split-without-transpose", "each of q, k, v reshaped straight to [B, H, T, hd]: reshape to "
                "[B, T, H, hd] first, then transpose(1, 2)",
                lambda: qkv_parts_without_transpose(qkv, heads))])


@model
def qkv_parts(qkv, heads):
    """split_qkv done right: q, k, v of the fused ``qkv`` [B, T, 3D], each [B, H, T, D/H] (a tuple)."""
    batch, tokens, three_dim = qkv.shape
    head_dim = three_dim // (3 * heads)
    return tuple(qkv.reshape(batch, tokens, 3, heads, head_dim).permute(2, 0, 3, 1, 4))


@model
def qkv_parts_per_head(qkv, heads):
    """q, k, v of ``qkv`` split with the per-head layout reshape(B, T, H, 3, D/H) (a tuple)."""
    batch, tokens, three_dim = qkv.shape
    head_dim = three_dim // (3 * heads)
    return tuple(qkv.reshape(batch, tokens, heads, 3, head_dim).permute(3, 0, 2, 1, 4))


@model
def qkv_parts_without_transpose(qkv, heads):
    """q, k, v of ``qkv``, each reshaped straight to [B, H, T, hd] (heads-split-without-transpose; a tuple)."""
    batch, tokens, three_dim = qkv.shape
    head_dim = three_dim // (3 * heads)
    return tuple(p.reshape(batch, heads, tokens, head_dim)
                 for p in qkv.reshape(batch, tokens, 3, heads * head_dim).unbind(2))


# --- modules: what a pair was made with ---------------------------------------------------------------
SIGNATURES = {WRAPPER: ("d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"),
              MHA: ("d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias"),
              FUSED: ("dim", "chan", "num_heads", "qkv_bias", "qk_scale")}
DEFAULTS = {"num_heads": 1, "qkv_bias": False, "qk_scale": None}


def argument(pair, name):
    """The constructor argument ``name`` the pair was made with (positional or keyword)."""
    names = SIGNATURES[pair.name]
    index = names.index(name)
    if index < len(pair.args):
        return pair.args[index]
    return pair.kwargs.get(name, DEFAULTS.get(name))


def plain(x):
    return x.detach().cpu()


# --- modules: checking -----------------------------------------------------------------------------------
def module_same(grade, pair, x, *, grad=False, seed=None, candidates=(), right=None, root_cause=None):
    """The module's output matches the reference's; if not, the candidate ``(misconception, what,
    make(x, seed))`` that explains it is named. ``right(x, seed)`` recomputes the right output;
    ``root_cause(grade, pair, x, seed)`` gives diagnose.diagnosed's root_cause (a helper to blame).
    A vectorised class's rule is read on the call too (:func:`vectorised_here`)."""
    counted = []
    read = pair.name in (MHA, FUSED) and x.shape[1] >= 2 and grade.live_reference
    out = pair.same(x, grad=grad, seed=seed,
                    mistakes=[matches(m, what, lambda make=make: make(plain(x), seed)) for m, what, make in candidates],
                    right=None if right is None else (lambda: right(plain(x), seed)),
                    root_cause=None if root_cause is None else root_cause(grade, pair, x, seed),
                    rules=[(VECTORISED, lambda reply: counted.append(reply.ops))] if read else ())
    if counted and counted[0] is not None:
        vectorised_here(grade, pair, x, grad, counted[0], seed, root_cause)
    return out


def vectorised_here(grade, pair, x, grad, ops, seed=None, root_cause=None):
    """The vectorised rule read on a comparing call of ``x`` that made ``ops`` torch operations and was right
    (lesson.vectorised_on): the same instance on another sequence of ``x``'s own tokens (lesson.lengthened), or,
    where its context_length is shorter than that sequence, the instance made again for it with the same weights
    (:func:`longer_twin`): red team round 23b, a loop padded under the bound on instances of a short context.
    ``root_cause`` (as :func:`module_same`'s) judges the other call given the student's helpers too: wrong there
    only by a helper of the student's (split_heads wrong on long sequences alone), the rule is read again with a
    right one once the check has run (lesson.vectorised_on), and the helper's mistake costs once, in its own
    exercise (issue 44's blind parity round: the caller lost its rule check as well)."""
    tokens = x.shape[1]
    generator = torch.Generator().manual_seed(grade.seed ^ (tokens * 7919 + x.shape[0]))
    mode = pair.ref.training  # (a call read again once the check has run: in the mode of this one)

    def call_with(other):
        x_other = lengthened(x, other, generator)  # x's values and layout (red team round 23b: tells)
        context = argument(pair, "context_length") if pair.name == MHA else None
        if pair.ref.training != mode:
            pair.train(mode)
        # the twin's context as far beyond the call as the pair's (red team round 24: a context of exactly the
        # call's tokens told the twin's call apart, and a mask never cut ran there alone)
        same = pair if context is None or other <= context else longer_twin(grade, pair, other + context - tokens)
        counted = []
        same.same(x_other, grad=grad, seed=seed, rules=[(VECTORISED, lambda reply: counted.append(reply.ops))],
                  root_cause=None if root_cause is None else root_cause(grade, same, x_other, seed))
        return counted[0] if counted else None

    vectorised_on(grade, pair.name, f"{pair.what} forward(<{shape_str(x.shape)}>)", tokens, ops,
                  lambda: grade.count_reference(pair.name, lambda: pair.ref, (x,), {}), call_with)


LONG_CONTEXT = 80  # a twin's context_length: longer than a loop padded within the least bound covers (lesson)


def longer_twin(grade, pair, context):
    """``pair``'s class made again with ``context`` for its context_length, its other arguments, its weights,
    its dtype and its mode as the pair's."""
    index = SIGNATURES[pair.name].index("context_length")
    args, kwargs = list(pair.args), dict(pair.kwargs)
    if index < len(args):
        args[index] = context
    else:
        kwargs["context_length"] = context
    return grade.module(pair.name, *args, dtype=pair.dtype, training=pair.ref.training, weights=pair.weights, **kwargs)


def causal_module_check(grade, pair, x, check):
    """Run ``check``; if the student's causal module (the pair's class) crashes on ``x`` with fewer tokens
    than its context_length but runs with context_length = T, say that the mask was not truncated."""
    context = argument(pair, "context_length")
    try:
        return check()
    except StudentFault as fault:
        raise mistaken.not_truncated(fault, x.shape[1], context, lambda: student_module(
            grade, pair.name, argument(pair, "d_in"), argument(pair, "d_out"), x.shape[1], 0.0,
            argument(pair, "num_heads"), qkv_bias=argument(pair, "qkv_bias"), params=pair.weights, dtype=pair.dtype,
            training=False)(x)) from None


DIAGNOSES = {}  # class -> (mistakes(pair), right(pair), root_cause)


def diagnosed_same(grade, pair, x, *, grad=False, seed=None):
    """module_same with the class's own diagnosis (DIAGNOSES)."""
    mistakes, right, root_cause = DIAGNOSES[pair.name]
    return module_same(grade, pair, x, grad=grad, seed=seed, candidates=mistakes(pair), right=right(pair),
                       root_cause=root_cause)


def random_module_check(grade, name, d_in, d_out, context, heads, batch, tokens, bias, dtype):
    """Random weights and inputs, gradients included, for a causal class (the wrapper, MHA)."""
    pair = grade.module(name, d_in, d_out, context, 0.0, heads, qkv_bias=bias, dtype=dtype)
    x = grade.randn(batch, tokens, d_in, dtype=dtype)
    causal_module_check(grade, pair, x, lambda: diagnosed_same(grade, pair, x, grad=True))


def expect_deterministic_eval(grade, pair, x):
    """In eval mode the output is the reference's (no dropout), and the same on every call (the
    student's own helper forgiven, when the output is right given it)."""
    root_cause = DIAGNOSES[pair.name][2]

    def check():
        pair.train(False)

        def same():
            module_same(grade, pair, x, root_cause=root_cause)

        try:
            first = pair.call(x).out
            second = pair.call(x).out
        except (StudentFault, CheckFailed):
            same()  # the raise judged there: a helper's, when the right computation raises so on its result
            raise
        if isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape \
                and not torch.equal(first.nan_to_num(), second.nan_to_num()):  # NaN twice is no dropout
            failure = CheckFailed(f"{pair.what}: in eval mode two calls on the same input gave different outputs; "
                                  "dropout must only act in training mode", ("dropout-in-eval",))
            blamed = heads_eval_dropout_root_cause(pair, x, failure) if pair.name == WRAPPER else None
            raise blamed or failure
        same()

    causal_module_check(grade, pair, x, check)


def expect_module_dropout(grade, pair, *, tokens, p=0.5):
    """Dropout by its effect (lesson/dropout.py), the evaluation-mode output diagnosed as the class's.
    The wrapper, whose heads are the student's CausalAttention: a training-mode mistake that the student's
    own CausalAttention makes just so, alone, is that exercise's (charged once, there)."""
    _, right, _ = DIAGNOSES[pair.name]
    counted = []
    try:
        expect_dropout_on_weights(grade, pair, tokens=tokens, p=p, eval_same=lambda x: diagnosed_same(grade, pair, x),
                                  right=lambda x: right(pair)(plain(x), None), counted=counted)
    except CheckFailed as failure:
        none = nothing_dropped(grade, pair, tokens, p) if "the weights kept are not scaled by" in failure.message \
            else None
        if none is not None:
            raise none from None
        evaluation = failure.misconceptions == ("dropout-in-eval",) or "in training mode" not in failure.message
        if pair.name == WRAPPER and evaluation:  # the evaluation-mode output: its heads' own, alone too?
            d_in = pair.weights["heads.0.W_query.weight"].shape[1]
            blamed = heads_eval_dropout_root_cause(pair, one_hot(2, tokens, d_in, pair.dtype or torch.float32), failure)
            if blamed is not None:
                raise blamed from None
        if pair.name != WRAPPER or not failure.misconceptions or "in training mode" not in failure.message:
            raise
        blamed = heads_dropout_root_cause(grade, pair, tokens, p, failure)
        if blamed is None:
            raise
        raise blamed from None
    if pair.name in (MHA, FUSED) and counted and counted[0] is not None:
        trained_vectorised(grade, pair, tokens, counted[0], p)


def trained_vectorised(grade, pair, tokens, ops, p):
    """The vectorised rule read on the training-mode call of the dropout check (``ops`` operations on one-hot
    inputs of ``tokens`` tokens, dropout ``p``): the same instance, in training mode, on 2 tokens (or 3) makes as
    many (within LAYOUT_OPS). Its output is not compared (dropout draws are the student's): what is read is the
    count. Red team round 23: a loop over the queries in training mode only, where the rule was read on
    evaluation-mode calls alone. Where the reference runs here, 04's class made for LONG_CONTEXT one-hot tokens
    (:func:`grown_for_dropout`) makes as many in training mode, drops their weights as the contract says
    (lesson.dropout.judged), and no count is beyond the reference's bound (Grade.expect_few_operations): rounds 23b
    and 24b, a loop padded to the context's rounds, to the inputs' width, or to a constant, whose vectorised code
    dropped one mask for every head, or dropped the context."""
    from lesson.dropout import one_hot

    dtype = pair.dtype or torch.float32
    other = 2 if tokens > 3 else tokens + 2
    d_in = argument(pair, "d_in")
    counts = [ops]
    if other <= d_in:
        other_ops = pair.train(True).call(one_hot(2, other, d_in, dtype), seed=grade.seed).ops
        counts.append(other_ops)
        if other_ops is not None and abs(other_ops - ops) > LAYOUT_OPS:
            grade.rules_broken.append((VECTORISED, f"{pair.what} in training mode made {ops} torch operations on "
                                       f"{tokens} tokens and {other_ops} on {other}: its code loops over tokens there"))
    if pair.name != MHA or not grade.live_reference:
        return
    try:  # the bound: no training-mode count beyond what the reference's allows (a loop padded to a constant)
        grade.count_reference(pair.name, lambda: pair.ref, (one_hot(2, tokens, d_in, dtype),), {})
        grade.expect_few_operations(pair.name, *counts)
    except CheckFailed as failure:
        grade.rules_broken.append((VECTORISED, f"{pair.what} in training mode: {failure.message}"))
    grown = LONG_CONTEXT
    x = one_hot(2, grown, grown, dtype)
    what = f"{pair.name} made for {grown} one-hot tokens, in training mode (the dropout check's design, grown)"
    try:
        twin = grown_for_dropout(grade, pair, tokens, grown)
        own = twin.train(False).reference(x).detach().cpu().double()
        reply = twin.train(True).call(x, seed=grade.seed)
    except (CheckFailed, StudentFault) as failure:
        grade.rules_unverified.append((VECTORISED, f"{what}: it raised ({failure.message.splitlines()[0][:200]})"))
        return
    tolerance = grade.tolerance(own.to(dtype))
    problem, _ = judged(own, reply.out, p, grown, tolerance)
    helper = problem and _helper_blamed(grade, twin, x)
    if helper:  # wrong by the student's helper alone (split_heads wrong on long sequences): read with a right one
        def read():
            short = pair.train(True).call(one_hot(2, tokens, d_in, dtype), seed=grade.seed).ops
            again = twin.train(True).call(x, seed=grade.seed)
            return not judged(own, again.out, p, grown, tolerance)[0] and \
                None not in (short, again.ops) and abs(again.ops - short) <= LAYOUT_OPS

        grade.read_given_right(helper, VECTORISED, f"{what}: {problem}", read)
    elif problem:
        grade.rules_unverified.append((VECTORISED, f"{what}: {problem}"))
    elif reply.ops is not None and abs(reply.ops - ops) > LAYOUT_OPS:
        grade.rules_broken.append((VECTORISED, f"{pair.what} in training mode made {ops} torch operations on "
                                   f"{tokens} one-hot tokens, and the same class made for {grown} tokens {reply.ops}: "
                                   "its code loops over the tokens there"))


def _helper_blamed(grade, twin, x) -> str:
    """The student's helper that alone makes ``twin`` (04's MultiHeadAttention) wrong in evaluation mode on ``x``
    (the class's root cause: a RightGivenHelper), or ""."""
    try:
        twin.train(False).same(x, root_cause=mha_root_cause(grade, twin, x, None))
    except RightGivenHelper as given:
        return given.helper.split(" (", 1)[0]
    except (CheckFailed, StudentFault):
        return ""
    return ""


def grown_for_dropout(grade, pair, tokens, grown):
    """04's MultiHeadAttention made as the dropout check's ``pair`` (``tokens`` one-hot tokens) but for ``grown``
    tokens: as many inputs, value heads of twice as many features, the context as far beyond them; the dropout,
    heads, bias and dtype the pair's; the design's weights (lesson.dropout.design), in evaluation mode."""
    from lesson.dropout import design

    heads = argument(pair, "num_heads")
    made = {"d_in": grown, "d_out": heads * 2 * grown,
            "context_length": grown + argument(pair, "context_length") - tokens}
    names = SIGNATURES[pair.name]
    args = [made.get(name, value) for name, value in zip(names, pair.args)]
    kwargs = {name: made.get(name, value) for name, value in pair.kwargs.items()}
    kwargs.update({name: value for name, value in made.items() if names.index(name) >= len(args)})
    twin = grade.module(pair.name, *args, dtype=pair.dtype, training=False, **kwargs)
    return twin.set_weights(design(twin.parameter_shapes(), grown))


def nothing_dropped(grade, pair, tokens, p):
    """A failure saying that no attention weight is dropped, where the module's training-mode output on the
    dropout check's one-hot tokens (the design it set, which shows the weights) is its evaluation-mode one,
    exactly (judged says "the weights kept are not scaled" then, every weight being kept unscaled). None
    otherwise."""
    dtype = pair.dtype or torch.float32
    d_in = next(shape[1] for name, shape in pair.parameter_shapes().items() if name.endswith("W_query.weight"))
    x = one_hot(2, tokens, d_in, dtype)  # the check's one-hot tokens (lesson/dropout.py)
    try:
        own = pair.train(False).call(x).out
        trained = pair.train(True).call(x, seed=grade.seed).out
    except (StudentFault, CheckFailed):
        return None
    finally:
        pair.train(False)
    if not isinstance(own, torch.Tensor) or not isinstance(trained, torch.Tensor) or own.shape != trained.shape \
            or not torch.equal(own, trained):
        return None
    return CheckFailed(f"{pair.what} in training mode (dropout {p}): no attention weight is "
                       "dropped, its output is the one in evaluation mode: apply self.dropout to the attention "
                       f"weights in forward, after the softmax and before they multiply the values{grade.case()}")


def heads_dropout_root_cause(grade, pair, tokens, p, failure):
    """The wrapper's training-mode dropout judged wrong with ``failure``'s mistakes: the student's own
    CausalAttention (assignment 03), built alone with the first head's weights (the design the check set,
    which shows the attention weights), judged the same way on the same one-hot tokens, makes them too:
    the helper's mistake (diagnose.helper_at_fault). None otherwise, or where 03 is not at hand."""
    params = head_weights(pair, 0)
    d_in = params["W_query.weight"].shape[1]
    dtype = pair.dtype or torch.float32
    x = one_hot(2, tokens, d_in, dtype)  # the check's one-hot tokens (lesson/dropout.py)
    try:
        own = their_03_alone(pair, params, d_in, p, training=False)(x)
        trained = their_03_alone(pair, params, d_in, p, training=True)(x, seed=grade.seed)
    except (StudentFault, CheckFailed, KeyError, UsageError):
        return None
    if not isinstance(own, torch.Tensor):
        return None
    own = own.detach().cpu().double()
    problem, theirs = judged(own, trained, p, tokens, grade.tolerance(own.to(dtype)))
    if not problem or set(theirs) != set(failure.misconceptions):
        return None
    return of_03(diagnose.helper_at_fault(grade, failure, "CausalAttention (assignment 03)", problem,
                                          theirs[0] if theirs else None), failure)


def heads_eval_dropout_root_cause(pair, x, failure):
    """The wrapper's evaluation-mode calls that differ, where the student's own CausalAttention (assignment 03),
    made alone with the first head's weights in evaluation mode, gives different outputs on two calls too: the
    helper's dropout-in-eval, charged in 03 (a styles hunt of session 18: an honest wrapper lost 5 points beside a
    03 class calling F.dropout(..., training=True)). Provisional: the check run again with a right CausalAttention
    in place of the student's must be right (of_03). None otherwise, or where 03 is not at hand."""
    params = head_weights(pair, 0)
    try:
        single = their_03_alone(pair, params, argument(pair, "d_in"), argument(pair, "dropout"), training=False)
        first, second = single(x, seed=1), single(x, seed=2)
    except (StudentFault, CheckFailed, KeyError, UsageError):
        return None
    if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape
            and not torch.equal(first.nan_to_num(), second.nan_to_num())):
        return None
    return of_03(diagnose.helper_at_fault(pair.grade, failure, "CausalAttention (assignment 03)",
                                          "its dropout is active in evaluation mode: two calls on the same input "
                                          "give different outputs", "dropout-in-eval"), failure)


def expect_vectorised(grade, pair, x_short, x_long):
    """As many torch operations for a long sequence as for a short one, each output right."""
    grade.reads_rule(VECTORISED)
    root_cause = DIAGNOSES[pair.name][2]

    def measure(x):
        return pair.measured(x, root_cause=root_cause(grade, pair, x, None)).ops

    short = causal_module_check(grade, pair, x_short, lambda: measure(x_short)) if pair.name != FUSED \
        else measure(x_short)
    grade.expect_not_growing(pair.name, short, measure(x_long))


# --- attention as the classes compute it, done right or with one mistake --------------------------------
def attention(q, k, v, scale, *, causal="future", **changes):
    """Causal attention of one head (or of [B, H, T, hd] heads), with ``changes`` to mistaken.attend's
    arguments and the causal mask ``causal`` (mistaken.causal_variants, or None)."""
    masks = mistaken.causal_variants(q.shape[-2], k.shape[-2], q.device)
    settings = dict(scale=scale, hidden=masks.get(causal))
    settings.update(changes)
    return mistaken.attend(q, k, v, **settings)


# attention's usual mistakes, as changes to attention's arguments
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
)
# mistakes that leave a softmax with nothing visible (a row, or the heads at a hidden position), for the
# other ways code treats that: NaN from torch.softmax, uniform weights from a large negative fill
ATTENTION_MISTAKES += tuple((m, what, {**changes, "rows": rows}) for rows in mistaken.HIDDEN_ROWS[1:]
                            for m, what, changes in ATTENTION_MISTAKES if "causal" in changes or "dim" in changes)


# --- MultiHeadAttentionWrapper --------------------------------------------------------------------------
def wrapper_variant(pair, x, *, order=1, scaled=True, scale=None, interleaved=False, **changes):
    """The wrapper with one thing changed, computed from its heads' weights (``scale``: a number that
    multiplies the scores; ``interleaved``: the heads' features interleaved, torch.stack(dim=-1).flatten(-2))."""
    return wrapper_output(pair.weights, argument(pair, "num_heads"), x, order=order, scaled=scaled, scale=scale,
                          interleaved=interleaved, **changes)


@model
def wrapper_output(weights, num_heads, x, *, order=1, scaled=True, scale=None, interleaved=False, **changes):
    """wrapper_variant's computation: the wrapper of ``num_heads`` heads holding ``weights`` (a pair's
    {parameter name: tensor}) on ``x``, with the changes wrapper_variant names."""
    outputs = []
    for head in list(range(num_heads))[::order]:
        q, k, v = (linear(weights, f"heads.{head}.{role}", x) for role in ("W_query", "W_key", "W_value"))
        multiplier = scale if scale is not None else k.shape[-1] ** -0.5 if scaled else 1.0
        outputs.append(attention(q, k, v, multiplier, **changes))
    if interleaved:
        return torch.stack(outputs, dim=-1).flatten(-2)
    return torch.cat(outputs, dim=-1)


WRAPPER_MISTAKES = ATTENTION_MISTAKES + (
    ("missing-scale", "unscaled scores: divide by sqrt(d_out) of a head", {"scaled": False}),
    (None, "the heads concatenated in reverse order: head 0's features come first", {"order": -1}),
    (None, "the heads' features interleaved (feature 0 of every head, then feature 1 of every head, ...), as "
     "torch.stack(outs, dim=-1).flatten(-2) gives: each head's d_out features must stay together, head after "
     "head, torch.cat(outs, dim=-1)", {"interleaved": True}),
)


def wrapper_mistakes(pair):
    def scale_fit(x, s):
        head_dim = pair.weights["heads.0.W_key.weight"].shape[0]
        return ScaleSearch(lambda c: wrapper_variant(pair, x, scale=c), head_dim ** -0.5)

    return [(m, d, (lambda x, s, flags=flags: wrapper_variant(pair, x, **flags)))
            for m, d, flags in WRAPPER_MISTAKES] + [(None, "", scale_fit)]


def wrapper_right(pair):
    return lambda x, s: wrapper_variant(pair, x)


def heads_root_cause(grade, pair, x, seed):
    """Blame the student's CausalAttention (assignment 03) when the wrapper's output is what the
    student's own CausalAttention gives, head by head, with the wrapper's weights: each head made alone in a
    process of its own, as 03's own checks make one (a class wrong only as a stack of them is made is not wrong
    on a call its own exercise grades: the case is the wrapper's)."""
    def blame(failure, out):
        heads = argument(pair, "num_heads")
        theirs = []
        try:  # (a course without 03, such as a distribution of 04 alone, has no CausalAttention to blame)
            for head in range(heads):
                single = their_03_alone(pair, head_weights(pair, head), argument(pair, "d_in"),
                                        argument(pair, "dropout"), training=False)
                try:
                    theirs.append(single(x))
                except StudentFault as fault:  # the class alone raises on the head's call: the wrapper's raise is
                    if not isinstance(failure, RaisedFailure):  # its, if a right class makes the wrapper right
                        return None
                    return given_their_causal_mask(grade, pair, failure, out, plain(x), None) or \
                        of_03(diagnose.helper_at_fault(grade, failure, "CausalAttention (assignment 03)",
                                                       f"it raises on this case's inputs ({fault.kind})",
                                                       provisional=True), failure)
        except (StudentFault, CheckFailed, KeyError, UsageError):
            return None
        xc = plain(x)
        with torch.no_grad():
            right = wrapper_variant(pair, xc)
        if not all(isinstance(t, torch.Tensor) and t.shape == theirs[0].shape for t in theirs) \
                or sum(t.numel() for t in theirs) > right.numel() * max(x.shape[1], argument(pair, "context_length")):
            return None  # (a mask used whole broadcasts a call of one token to the context's length, no more)
        return given_their_causal_mask(grade, pair, failure, out, xc, torch.cat(theirs, dim=-1)) or \
            of_03(mistaken.blame(grade, failure, out, "CausalAttention (assignment 03)", torch.cat(theirs, dim=-1),
                                 right, lambda h: h, [(m, f"your CausalAttention gives {what}",
                                                       lambda make=make: make(xc, seed))
                                                      for m, what, make in wrapper_mistakes(pair)]), failure)
    return blame


def given_their_causal_mask(grade, pair, failure, out, x, heads):
    """The wrapper's failure blamed on the student's causal_mask (assignment 03), where the student's
    CausalAttention, head by head (``heads``), is the right class given the mask that causal_mask makes for its
    context: the mistake is the function's, which 03 charges, not the class's, whose own checks are all right given
    it (a wrapper beside a causal_mask hiding the diagonal lost 12.5 of 15 as "a mistake CausalAttention's own
    checks do not find", the chain's own mistake charged twice). Verified, as any function helper's blame, by the run
    with a right causal_mask in place of theirs; None where that mask does not explain the heads."""
    from lesson.checks_03 import causal_masks, mask_mistakes

    context, tokens = argument(pair, "context_length"), x.shape[1]
    try:
        mask = diagnose.their(pair.grade.sibling("03_causal_attention"), "causal_mask", context)
    except (StudentFault, CheckFailed, KeyError, UsageError):
        return None
    masks = causal_masks(context)
    if not isinstance(mask, torch.Tensor) or mask.shape == (context, context) and mask.dtype == torch.bool \
            and torch.equal(mask, masks["future"]):
        return None  # (not had, or right: the class's own)
    if heads is None or mask.shape != (context, context) or mask.dtype != torch.bool:
        # a mask of another kind or size (float, int64, one token more or less), on which the class raised or which
        # the grader cannot compose with: only the run with a right causal_mask can tell (hunt of session 19: a
        # right wrapper lost its 15 beside a float causal_mask, its class "passing all of its own checks", each
        # of them kept right given that mask)
        return diagnose.stand_in_decides(grade, failure, "causal_mask", f"it returns "
                                         f"{str(mask.dtype).replace('torch.', '')} {list(mask.shape)} for "
                                         f"context_length = {context}")

    def given(rows):  # the wrapper done right with a causal mask ([context, context]); a row whose keys the mask
        return lambda hidden: wrapper_variant(pair, x, hidden=hidden[:tokens, :tokens], rows=rows)  # hides all: rows

    with torch.no_grad():  # (zeros, as the course asks, or NaN, as torch.softmax gives and a class may leave)
        wrapper_given = next((given(rows) for rows in ("zero", "nan") if diagnose.matches(grade, heads, given(rows)(mask))),
                             None)
    if wrapper_given is None:
        return None  # the class's heads are not what the student's mask explains: the class's own
    found = mistaken.blame(grade, failure, out, "causal_mask", mask, masks["future"], wrapper_given,
                           mask_mistakes(lambda name: masks[name] if name else masks["future"]))
    if isinstance(found, RightGivenHelper) and found.unverified is None:
        found.unverified = failure  # kept once the run with a right causal_mask confirms it
    return found


def head_weights(pair, head: int) -> dict:
    """The wrapper's head ``head``: its parameters, named as a CausalAttention's."""
    prefix = f"heads.{head}."
    return {n[len(prefix):]: t for n, t in pair.weights.items() if n.startswith(prefix)}


def their_03_alone(pair, params, d_in, dropout, *, training):
    """The student's own CausalAttention (assignment 03) holding ``params``, made alone in a process of its own as
    03's own checks make one (red team round 26d: a class wrong only as a stack of them is made is not wrong on a
    call its own exercise grades; qkv_bias by name, round 26b): a function calling its forward."""
    other = pair.grade.sibling("03_causal_attention")  # (a course without 03 has none: UsageError)
    other.afresh()
    return student_module(other, "CausalAttention", d_in, params["W_query.weight"].shape[0],
                          argument(pair, "context_length"), dropout, params=params, dtype=pair.dtype,
                          training=training, **as_03_makes_it(params))


def as_03_makes_it(params) -> dict:
    """The keywords 03's own checks build a CausalAttention with (qkv_bias by name, where it is asked): a blame
    of the student's class holds for the calls its own exercise grades (red team round 26b: a class right on
    those and wrong only when qkv_bias came as a fifth positional argument, as the wrapper passes it)."""
    return {"qkv_bias": True} if "W_query.bias" in params else {}


def of_03(found, failure):
    """A case of the wrapper kept as right given the student's CausalAttention (assignment 03) holds only once
    the check, run again with a right CausalAttention in place of theirs, is right (the stand-in: red team round
    26, a wrapper that never used that class, computing nothing beside a 03 class that computed nothing too, or
    one wrong only as the blame builds it, kept every point); without that run, ``failure`` stands."""
    if isinstance(found, RightGivenHelper):
        found.helper = "CausalAttention"
        found.unverified = found.unverified or failure
    return found


# --- MultiHeadAttention ---------------------------------------------------------------------------------
def mha_variant(pair, x, *, scale="head", split_transpose=True, merge_transpose=True, out_proj=True,
                roles=mistaken.ROLES, **changes):
    """MultiHeadAttention with one thing changed, computed from the pair's weights."""
    return mha_output(pair.weights, argument(pair, "num_heads"), argument(pair, "d_out"), x, scale=scale,
                      split_transpose=split_transpose, merge_transpose=merge_transpose, out_proj=out_proj,
                      roles=roles, **changes)


@model
def mha_output(weights, heads, d_out, x, *, scale="head", split_transpose=True, merge_transpose=True,
               out_proj=True, roles=mistaken.ROLES, **changes):
    """mha_variant's computation: MultiHeadAttention of ``heads`` heads and width ``d_out`` holding
    ``weights`` (a pair's {parameter name: tensor}) on ``x``, with the changes mha_variant names."""
    batch, tokens, _ = x.shape
    head_dim = d_out // heads

    def split(t):
        if split_transpose:
            return t.reshape(batch, tokens, heads, head_dim).transpose(1, 2)
        return t.reshape(batch, heads, tokens, head_dim)

    projected = {role: linear(weights, f"W_{role}", x) for role in mistaken.ROLES}
    q, k, v = (split(projected[role]) for role in roles)
    if isinstance(scale, str):  # the scale named, or a number that multiplies the scores
        scale = 1.0 / {"head": head_dim ** 0.5, "model": d_out ** 0.5, "head-not-sqrt": float(head_dim), "none": 1.0,
                       "multiplied": head_dim ** -0.5}[scale]
    context = attention(q, k, v, scale, **changes)
    if merge_transpose:
        context = context.transpose(1, 2)
    context = context.reshape(batch, tokens, d_out)
    return linear(weights, "out_proj", context) if out_proj else context


MHA_MISTAKES = ATTENTION_MISTAKES + (
    ("missing-scale", "unscaled scores: divide by sqrt(head_dim)", {"scale": "none"}),
    ("wrong-scale", "scores scaled by 1/sqrt(d_out), the model width; use the head size d_out/num_heads",
     {"scale": "model"}),
    ("wrong-scale", "scores multiplied by sqrt(head_dim) instead of divided", {"scale": "multiplied"}),
    ("wrong-scale", "scores divided by head_dim instead of sqrt(head_dim)", {"scale": "head-not-sqrt"}),
    ("out-proj-missing", "the heads' context without the output projection out_proj", {"out_proj": False}),
    ("heads-split-without-transpose", "heads split with view(B, H, T, hd) straight from [B, T, d_out]",
     {"split_transpose": False}),
    ("heads-merged-without-transpose", "heads merged back without transposing [B, H, T, hd] to [B, T, H, hd]",
     {"merge_transpose": False}),
    ("heads-split-without-transpose", "heads split with a reshape straight from [B, T, d_out] (to [B, H, T, hd] or "
     "[B*H, T, hd]) and merged back with one straight to [B, T, d_out]: neither moves the heads past the tokens; "
     "reshape to [B, T, H, hd] and transpose(1, 2), and transpose back before merging",
     {"split_transpose": False, "merge_transpose": False}),
) + tuple((m, what.removeprefix("your "), {"roles": roles}) for roles, (m, what) in mistaken.wrong_roles())


def mha_mistakes(pair):
    def scale_fit(x, s):
        head_dim = argument(pair, "d_out") // argument(pair, "num_heads")
        return ScaleSearch(lambda c: mha_variant(pair, x, scale=c), head_dim ** -0.5, "1/sqrt(head_dim)")

    return [(m, d, (lambda x, s, flags=flags: mha_variant(pair, x, **flags)))
            for m, d, flags in MHA_MISTAKES] + [(None, "", scale_fit)]


def mha_right(pair):
    return lambda x, s: mha_variant(pair, x)


def split_merge_root_cause(grade, pair, x, seed):
    """Blame the student's split_heads or merge_heads when the module's output is what they give,
    used on the right projections (split) or on the right attention output (merge)."""
    def blame(failure, out):
        batch, tokens, _ = x.shape
        heads, d_out = argument(pair, "num_heads"), argument(pair, "d_out")
        head_dim = d_out // heads
        with torch.no_grad():
            xc = plain(x)
            projected = mha_projections(pair.weights, xc)  # [3, B, T, D]
            split = heads_split(projected, batch, tokens, heads, head_dim)
            context = attention(*split, head_dim ** -0.5)  # [B, H, T, hd]

            def attend_and_merge(parts):
                return attended_merged(pair.weights, parts, head_dim ** -0.5, batch, tokens, d_out)

            theirs = [diagnose.their(grade, "split_heads", p, heads) for p in projected]
            raised = next((t for t in theirs if isinstance(t, diagnose.Raised)), None)
            # (a shape that no right computation takes is still blamed on a raise: the stand-in decides)
            if raised or all(isinstance(t, torch.Tensor) and t.shape == theirs[0].shape for t in theirs):
                blamed = mistaken.blame(grade, failure, out, "split_heads", raised or torch.stack(theirs), split,
                                        attend_and_merge,
                                        [("heads-split-without-transpose", "it reshapes straight to [B, H, T, hd]",
                                          lambda: heads_split_without_transpose(projected, batch, tokens, heads, head_dim))])
                if blamed:
                    return blamed
            return mistaken.blame(grade, failure, out, "merge_heads", diagnose.their(grade, "merge_heads", context),
                                  heads_merged(context, batch, tokens, d_out),
                                  lambda merged: out_projected(pair.weights, merged),
                                  [("heads-merged-without-transpose", "it reshapes straight from [B, H, T, hd]",
                                    lambda: heads_merged_without_transpose(context, batch, tokens, d_out))])
    return blame


@model
def heads_split(projected, batch, tokens, heads, head_dim):
    """The stacked projections ``projected`` [3, B, T, d_out] split into ``heads`` heads: [3, B, H, T, hd]."""
    return projected.reshape(3, batch, tokens, heads, head_dim).transpose(2, 3)


@model
def heads_split_without_transpose(projected, batch, tokens, heads, head_dim):
    """``projected`` [3, B, T, d_out] reshaped straight to [3, B, H, T, hd] (heads-split-without-transpose)."""
    return projected.reshape(3, batch, heads, tokens, head_dim)


@model
def heads_merged(context, batch, tokens, d_out):
    """The heads ``context`` [B, H, T, hd] merged back right: [batch, tokens, d_out]."""
    return context.transpose(1, 2).reshape(batch, tokens, d_out)


@model
def heads_merged_without_transpose(context, batch, tokens, d_out):
    """``context`` [B, H, T, hd] reshaped straight to [batch, tokens, d_out] (heads-merged-without-transpose)."""
    return context.reshape(batch, tokens, d_out)


@model
def mha_projections(weights, x):
    """MultiHeadAttention's query, key and value projections (``weights``: a pair's) of ``x``, stacked:
    [3, B, T, d_out]."""
    return torch.stack([linear(weights, f"W_{role}", x) for role in mistaken.ROLES])


@model
def attended_merged(weights, parts, scale, batch, tokens, d_out):
    """MultiHeadAttention done right from the heads ``parts`` (q, k, v stacked, [3, B, H, T, hd]) on: causal
    attention scaled by ``scale``, merged back to [batch, tokens, d_out], and out_proj (``weights``: a pair's)."""
    attended = attention(*parts, scale)
    return linear(weights, "out_proj", attended.transpose(1, 2).reshape(batch, tokens, d_out))


@model
def out_projected(weights, merged):
    """MultiHeadAttention's output projection out_proj (``weights``: a pair's) of the merged heads ``merged``."""
    return linear(weights, "out_proj", merged)


def keys_transposed_as_3d(pair, x, failure):
    """A raise that met the heads against the tokens at dimension 1 of a batched matmul: the 4-d keys
    [B, H, T, hd] transposed with transpose(1, 2), the single head's 3-d habit, which swaps heads and
    tokens ([B, T, H, hd]) instead of tokens and features. None otherwise."""
    heads, tokens = argument(pair, "num_heads"), x.shape[1]
    found = shape_mismatch(diagnose.last_line(failure.message), "broadcast")
    if found is None or found.dim is None or heads == tokens or set(found.sizes) != {heads, tokens} \
            or found.dim not in (1, -3):
        return None
    return CheckFailed(f"{failure.message}\nthe {heads} heads met the {tokens} tokens at dimension 1: with heads, "
                       f"q and k are [B, H, T, hd], and k.transpose(1, 2) (the single head's [B, T, d] habit) swaps "
                       f"heads and tokens; the scores need the last two dimensions swapped: q @ k.transpose(-2, -1) "
                       f"(or transpose(2, 3))")


def or_raised(blame, pair, x, told):
    """The root cause ``blame``; else, for a raise, what ``told(pair, x, failure)`` makes of its message."""
    def blame_or_told(failure, out):
        blamed = blame(failure, out)
        if blamed is None and isinstance(failure, RaisedFailure):
            return told(pair, x, failure)
        return blamed
    return blame_or_told


def mha_root_cause(grade, pair, x, seed):
    """split_merge_root_cause; else a raise of keys transposed as in 3-d (keys_transposed_as_3d)."""
    return or_raised(split_merge_root_cause(grade, pair, x, seed), pair, x, keys_transposed_as_3d)


# --- FusedQKVAttention ----------------------------------------------------------------------------------
def fused_sizes(pair):
    """(chan, num_heads, scale) of the pair's FusedQKVAttention."""
    chan = pair.weights["proj.weight"].shape[0]
    heads = argument(pair, "num_heads")
    return chan, heads, argument(pair, "qk_scale") or (chan // heads) ** -0.5


def fused_parts(pair, x, *, transpose=True, per_head=False):
    """q, k, v of the fused projection, stacked: [3, B, H, N, hd]; ``transpose=False``: each of them
    reshaped straight from [B, N, chan] to [B, H, N, hd] (heads-split-without-transpose); ``per_head``:
    the layout reshape(B, N, H, 3, hd), q, k and v interleaved per head (no catalogue id)."""
    chan, heads, _ = fused_sizes(pair)
    return fused_split(pair.weights, chan, heads, x, transpose=transpose, per_head=per_head)


@model
def fused_split(weights, chan, heads, x, *, transpose=True, per_head=False):
    """fused_parts' computation: the fused projection qkv (``weights``: a pair's) of ``x``, split into
    ``heads`` heads of a width ``chan`` as fused_parts says."""
    batch, tokens, _ = x.shape
    fused = linear(weights, "qkv", x)
    if per_head:
        return fused.reshape(batch, tokens, heads, 3, chan // heads).permute(3, 0, 2, 1, 4)
    if not transpose:
        return fused.reshape(batch, tokens, 3, chan).permute(2, 0, 1, 3).reshape(3, batch, heads, tokens,
                                                                                 chan // heads)
    return fused.reshape(batch, tokens, 3, heads, chan // heads).permute(2, 0, 3, 1, 4)


def fused_variant(pair, x, *, scale=None, skip=True, causal=False, proj=True, merge_transpose=True,
                  skip_transpose=None, order=(0, 1, 2), parts=None, split_transpose=True, skip_x=False, **changes):
    """FusedQKVAttention with one thing changed, computed from the pair's weights (``parts``: q, k, v
    stacked, in place of the right split; ``skip_transpose``: how v is merged for the skip connection,
    when not as the attended heads are)."""
    chan, _, right_scale = fused_sizes(pair)
    parts = fused_parts(pair, x, transpose=split_transpose) if parts is None else parts
    return fused_output(pair.weights, chan, parts, x, scale=right_scale if scale is None else scale, skip=skip,
                        causal=causal, proj=proj, merge_transpose=merge_transpose, skip_transpose=skip_transpose,
                        order=order, skip_x=skip_x, **changes)


@model
def fused_output(weights, chan, parts, x, *, scale, skip=True, causal=False, proj=True, merge_transpose=True,
                 skip_transpose=None, order=(0, 1, 2), skip_x=False, **changes):
    """fused_variant's computation: FusedQKVAttention of width ``chan`` holding ``weights`` (a pair's) on
    ``x``, from q, k, v stacked in ``parts``, its scores scaled by ``scale``, with the changes fused_variant
    names."""
    batch, tokens, _ = x.shape
    q, k, v = (parts[i] for i in order)
    hidden = mistaken.causal_variants(tokens, tokens, x.device)["future"] if causal else None
    attended = mistaken.attend(q, k, v, scale=scale, hidden=hidden, **changes)

    def merge(t, transpose=merge_transpose):
        return (t.transpose(1, 2) if transpose else t).reshape(batch, tokens, chan)

    out = linear(weights, "proj", merge(attended)) if proj else merge(attended)
    if skip_x:  # the usual residual: x, where the block's skip is v (only when dim == chan does it run)
        return out + x
    return out + merge(v, merge_transpose if skip_transpose is None else skip_transpose) if skip else out


def fused_mistakes(pair, split=None):
    """The block's mistakes, each as a candidate ``(id, what, make(x, seed))``; ``split``: q, k, v as the
    student's own split_qkv gives them (stacked), to name the block's own mistake stacked on that one."""
    chan, heads, right_scale = fused_sizes(pair)
    changes = [
        (None, "proj(attention) without the skip connection: add v, merged back to [B, N, chan]", {"skip": False}),
        (None, "causal attention; FusedQKVAttention is not causal", {"causal": True}),
        *([(None, SKIP_X, {"skip_x": True})] if argument(pair, "dim") == chan else []),
        ("missing-scale", "unscaled scores", {"scale": 1.0}),
        ("wrong-scale", "scores scaled by chan**-0.5, the model width; use the head size chan/num_heads",
         {"scale": chan ** -0.5}),
        ("wrong-scale", "scores multiplied by sqrt(head_dim), not divided", {"scale": 1.0 / right_scale}),
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
    if argument(pair, "qk_scale") is not None:
        changes.append(("wrong-scale", "the default scale head_dim**-0.5 although qk_scale was given",
                        {"scale": (chan // heads) ** -0.5}))
    if split is not None:  # on the student's own split: the block's mistakes that stack on it
        return [(m, d, (lambda x, s, flags=flags: fused_variant(pair, x, parts=split, **flags)))
                for m, d, flags in changes if "split_transpose" not in flags and "order" not in flags] + [
            (None, "", lambda x, s: ScaleSearch(lambda c: fused_variant(pair, x, parts=split, scale=c), right_scale,
                                                "qk_scale or head_dim**-0.5"))]
    # two mistakes stacked: each of those with an id on q, k, v split with the per-head layout (which has
    # none), named with the one that has
    per_head = "q, k, v split from the fused projection with the per-head layout reshape(B, N, H, 3, hd); " \
               "the fused layout is reshape(B, N, 3, H, hd).permute(2, 0, 3, 1, 4)"

    def on_per_head(x, **flags):
        return fused_variant(pair, x, parts=fused_parts(pair, x, per_head=True), **flags)

    return [(m, d, (lambda x, s, flags=flags: fused_variant(pair, x, **flags))) for m, d, flags in changes] + [
        (None, per_head, lambda x, s: on_per_head(x)),
        *((m, f"{d}, and {per_head}", (lambda x, s, flags=flags: on_per_head(x, **flags)))
          for m, d, flags in changes if m and "split_transpose" not in flags),
        (None, "", lambda x, s: ScaleSearch(lambda c: fused_variant(pair, x, scale=c), right_scale,
                                            "qk_scale or head_dim**-0.5")),
        (None, "", lambda x, s: ScaleSearch(lambda c: on_per_head(x, scale=c), right_scale,
                                            "qk_scale or head_dim**-0.5 (your q, k, v are also split with the "
                                            "per-head layout reshape(B, N, H, 3, hd))"))]


SKIP_X = "proj(attention) + x: the skip connection adds v (merged back to [B, N, chan]), not the input x"


def skip_through_x(pair, x, failure):
    """A raise that broadcast the block's chan features against x's dim features (dim != chan) at the
    last dimension: the input added as the skip connection, in place of v. None otherwise."""
    chan, dim = fused_sizes(pair)[0], argument(pair, "dim")
    found = shape_mismatch(diagnose.last_line(failure.message), "broadcast")
    if found is None or found.dim is None or dim == chan or set(found.sizes) != {chan, dim} \
            or found.dim % x.dim() != x.dim() - 1:
        return None
    return CheckFailed(f"{failure.message}\nthe block's chan = {chan} features met x's dim = {dim} at the last "
                       f"dimension: the output is [B, N, chan], and its skip connection adds v (merged back to "
                       f"[B, N, chan]), not the input x, whose width dim need not be chan")


def skip_v_unmerged(pair, x, failure):
    """A raise that broadcast the block's [B, N, chan] output against v still split into heads, [B, H, N,
    head_dim] (chan != head_dim, at the last of four dimensions): v added before it is merged back. None
    otherwise."""
    chan, heads, _ = fused_sizes(pair)
    head_dim = chan // heads
    found = shape_mismatch(diagnose.last_line(failure.message), "broadcast")
    if found is None or found.dim is None or head_dim == chan or set(found.sizes) != {chan, head_dim} \
            or found.dim % 4 != 3:
        return None
    return CheckFailed(f"{failure.message}\nthe block's output, [B, N, chan = {chan}], met v still split into heads, "
                       f"[B, H, N, head_dim = {head_dim}]: the skip connection adds v merged back to [B, N, chan], "
                       "proj(out) + merge_heads(v)")


def skip_told(pair, x, failure):
    """skip_through_x, else skip_v_unmerged."""
    return skip_through_x(pair, x, failure) or skip_v_unmerged(pair, x, failure)


def fused_right(pair):
    return lambda x, s: fused_variant(pair, x)


def fused_root_cause(grade, pair, x, seed):
    """Blame the student's split_qkv or merge_heads when the module's output is what they give, on the
    right fused projection (split) or on the right attention output and v (merge)."""
    def blame(failure, out):
        batch, tokens, _ = x.shape
        chan, heads, scale = fused_sizes(pair)
        with torch.no_grad():
            xc = plain(x)
            parts = fused_parts(pair, xc)
            qkv = qkv_projected(pair.weights, xc)
            theirs = diagnose.their(grade, "split_qkv", qkv, heads)
            if isinstance(theirs, tuple) and len(theirs) == 3 and all(diagnose.within(t, parts[0]) for t in theirs) \
                    and len({t.shape for t in theirs}) == 1:
                blamed = mistaken.blame(
                    grade, failure, out, "split_qkv", torch.stack(theirs), parts,
                    lambda split: fused_variant(pair, xc, parts=split),
                    [("qkv-swapped", f"it returns them in the order {', '.join('qkv'[i] for i in order)}",
                      lambda order=order: parts[list(order)])
                     for order in itertools.permutations(range(3)) if order != (0, 1, 2)] + [
                        ("heads-split-without-transpose", "it reshapes each of q, k, v straight to [B, H, T, hd]",
                         lambda: fused_split_without_transpose(qkv, batch, tokens, heads, chan))])
                if blamed:
                    return blamed
                stacked = torch.stack(theirs)
                if not isinstance(failure, (GradientFailure, RaisedFailure)) and stacked.shape == parts.shape \
                        and not diagnose.matches(grade, stacked.to(parts.dtype), parts):
                    own = stacked_on_split(grade, failure, out, pair, xc, stacked.to(parts.dtype), seed)
                    if own:
                        return own
            attended = mistaken.attend(parts[0], parts[1], parts[2], scale=scale)
            both = torch.stack((attended, parts[2]))  # merged: proj(first) + second
            # a raise is tried as the module met it, on heads that autograd tracks (an in-place transpose_
            # of them raises there, not on a plain tensor)
            tracked = ({"grad_out": torch.ones(batch, tokens, chan), "grad_args": [0]}
                       if isinstance(failure, RaisedFailure) else {})
            theirs = [diagnose.their(grade, "merge_heads", t, **tracked) for t in both]
            raised = next((t for t in theirs if isinstance(t, diagnose.Raised)), None)
            right = both_merged(both, batch, tokens, chan)  # [2, B, N, C]
            if raised is None and not all(diagnose.within(t, right[0]) and t.shape == theirs[0].shape for t in theirs):
                return None
            return mistaken.blame(grade, failure, out, "merge_heads", raised or torch.stack(theirs), right,
                                  lambda merged: proj_plus_skip(pair.weights, merged),
                                  [("heads-merged-without-transpose", "it reshapes straight from [B, H, N, hd]",
                                    lambda: both_merged_without_transpose(both, batch, tokens, chan))])

    return or_raised(blame, pair, x, skip_told)


@model
def qkv_projected(weights, x):
    """FusedQKVAttention's fused projection qkv (``weights``: a pair's) of ``x``: [B, N, 3 chan]."""
    return linear(weights, "qkv", x)


@model
def fused_split_without_transpose(qkv, batch, tokens, heads, chan):
    """q, k, v of the fused projection ``qkv`` [B, N, 3 chan], each reshaped straight to [B, H, N, hd], stacked
    (heads-split-without-transpose)."""
    return torch.stack([p.reshape(batch, heads, tokens, chan // heads)
                        for p in qkv.reshape(batch, tokens, 3, chan).unbind(2)])


@model
def both_merged(both, batch, tokens, chan):
    """The attended heads and v (``both``: the two stacked, [2, B, H, N, hd]) merged back right: [2, B, N, chan]."""
    return both.transpose(2, 3).reshape(2, batch, tokens, chan)


@model
def both_merged_without_transpose(both, batch, tokens, chan):
    """``both`` [2, B, H, N, hd] reshaped straight to [2, B, N, chan] (heads-merged-without-transpose)."""
    return both.reshape(2, batch, tokens, chan)


@model
def proj_plus_skip(weights, merged):
    """FusedQKVAttention's output from the merged attention and v (``merged``: the two stacked, [2, B, N,
    chan]): proj (``weights``: a pair's) of the first, plus the second."""
    return linear(weights, "proj", merged[0]) + merged[1]


def stacked_on_split(grade, failure, out, pair, x, split, seed):
    """Two mistakes stacked, one in the student's own split_qkv (charged in split_qkv) and one in the
    block: the block's own, named where one of its mistakes computed on the student's split is the
    output. None where none is (or only an unnamed one)."""
    found = diagnose.first_match(grade, out, [
        (m, what, lambda make=make: make(x, seed)) for m, what, make in fused_mistakes(pair, split=split)],
        right=fused_variant(pair, x, parts=split))
    if not found or not found[0]:
        return None
    misconception, explanation = found
    return CheckFailed(f"{failure.message}; your split_qkv is wrong (fix the split_qkv exercise), and given the "
                       f"q, k, v it gives, your block has a mistake of its own: {explanation}", (misconception,))


DIAGNOSES.update({WRAPPER: (wrapper_mistakes, wrapper_right, heads_root_cause),
                  MHA: (mha_mistakes, mha_right, mha_root_cause),
                  FUSED: (fused_mistakes, fused_right, fused_root_cause)})


def split_qkv_raises(grade, qkv, num_heads):
    """split_qkv(qkv, num_heads) must raise ValueError where 3D is a multiple of num_heads (and of 3) but D
    is not: the check qkv.shape[-1] % num_heads alone lets it through to a reshape that raises otherwise."""
    width = qkv.shape[-1]
    try:
        grade.raises(("ValueError",), "split_qkv", qkv, num_heads)
    except CheckFailed as failure:
        raise CheckFailed(f"{failure.message}: 3D = {width} is 3 x {width // 3}, and D = {width // 3} is not a "
                          f"multiple of num_heads = {num_heads} (though 3D is), so the heads cannot share it; check "
                          f"qkv.shape[-1] % (3 * num_heads) before reshaping, and raise ValueError") from None
