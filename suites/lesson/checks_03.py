"""How 03_causal_attention's checks judge and diagnose, shared by its hidden and its public suite.

The same functions grade the instructor's fresh cases and the student's fixed ones, so that a file
gets the same verdict on both sides: the same mistakes named, the same helper forgiven ("right,
given your causal_mask"). Nothing here reads the reference: the right outputs and the wrong ones are
the lesson's formulas (lesson.mistaken), computed from the inputs, from the weights a module pair
holds (``pair.weights``) and from the student's own helpers (grader.grading.diagnose.their), so that a
replayed run (a student distribution, which has no reference) diagnoses as live grading does.
"""
from __future__ import annotations

import torch

from grader.authoring import CheckFailed, HandleRef, Mistake, StudentFault, diagnose, model, name_mistake
from lesson import every_call, mistaken
from lesson.mistaken import linear
from lesson.dropout import expect_dropout_on_weights


@model
def future_mask(tokens):
    """The right causal mask, [T, T] (True = hidden)."""
    return torch.triu(torch.ones(tokens, tokens, dtype=torch.bool), 1)


def softmax_weights(grade, *shape, dtype=torch.float32):
    """Rows that sum to 1, as renormalize_causal_weights receives them."""
    return softmaxed(grade.randn(*shape, dtype=dtype, scale=2.0))


@model
def softmaxed(scores):
    """``scores`` made weights whose rows sum to 1."""
    return torch.softmax(scores, dim=-1)


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


def causal_mask_root_cause(grade, failure, out, tokens, compose, exercise=None):
    """The failure blamed on the student's causal_mask, when ``compose(mask)`` (this exercise done right
    with that mask) gives the student's output, or (on a GPU) when ``exercise = (name, args)`` raised
    only because that mask was left on the CPU."""
    masks = causal_masks(tokens)
    return mistaken.blame(grade, failure, out, "causal_mask", diagnose.their(grade, "causal_mask", tokens),
                          masks["future"], compose, mask_mistakes(lambda name: masks[name] if name else masks["future"]),
                          call=(tokens,)) or \
        (exercise and diagnose.device_ignored(grade, failure, "causal_mask", lambda: on_device(grade, tokens), *exercise,
                                              lambda: compose(masks["future"])))


def on_device(grade, tokens):
    """The student's causal_mask(tokens, device=) asked for the grading device."""
    return diagnose.their(grade, "causal_mask", tokens, device=torch.device(grade.device))


# --- the functions ------------------------------------------------------------------------------------
def causal_mask_same(grade, tokens, named=True, **kwargs):
    """causal_mask(tokens) matches the reference; ``named``: its mistakes are named."""
    mistakes = [
        Mistake("mask-inverted", "your mask hides the past; True must mark the future (j > i)",
                lambda: wrong_mask(tokens, "past")),
        Mistake("mask-inverted", "your mask is True where attending is allowed; True means hidden",
                lambda: wrong_mask(tokens, "past-and-diagonal")),
        Mistake("mask-hides-diagonal", "your mask hides the diagonal too; a token may attend to itself",
                lambda: wrong_mask(tokens, "future-and-diagonal")),
    ] if named else ()
    grade.same("causal_mask", tokens, mistakes=mistakes, **kwargs)


@model
def wrong_mask(tokens, kind):
    """causal_mask(tokens) done wrong: ``kind`` is mistaken.causal_variants' name of the mask it gives."""
    return mistaken.causal_variants(tokens, tokens)[kind]


def apply_mask(scores):
    return lambda hidden: masked_scores(scores, hidden)


@model
def masked_scores(scores, hidden):
    """apply_causal_mask done with the mask ``hidden`` (None: no mask)."""
    return scores if hidden is None else scores.masked_fill(hidden, float("-inf"))


def renormalize(weights):
    return lambda hidden: renormalized(weights, hidden)


@model
def renormalized(weights, hidden):
    """renormalize_causal_weights done with the mask ``hidden`` (None: no mask)."""
    kept = weights if hidden is None else weights.masked_fill(hidden, 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


def masked_same(grade, name, x, compose, grad=False, extra=()):
    """``name(x)`` matches the reference; if not, blame the student's causal_mask or name the mask
    mistake. ``compose(hidden)`` is ``name`` done right with the mask ``hidden`` (None: no mask);
    ``extra``: more mistakes of this exercise."""
    masks = causal_masks(x.shape[-1])
    blame = mask_root_cause(grade, x, name, compose)
    grade.same(name, x, grad=grad, mistakes=[*mask_mistakes(lambda m: compose(masks[m] if m else None)), *extra],
               right=lambda: compose(masks["future"]),
               root_cause=lambda failure, out: blame(failure, out)
               or batched_crash_explained(grade, name, x, failure, ONE[name]) if name in ONE else None)


def mask_root_cause(grade, x, name="apply_causal_mask", compose=None):
    """``name(x)`` blamed on the student's causal_mask, where that explains its output; ``compose(hidden)``:
    ``name`` done right with the mask ``hidden`` (default: apply_causal_mask's)."""
    compose = compose or apply_mask(x)
    return lambda failure, out: causal_mask_root_cause(grade, failure, out, x.shape[-1], compose, (name, (x,)))


def batched_crash_explained(grade, name, x, failure, compose_of, slips=lambda one: ()):
    """A raise of ``name`` on batched [..., T, T] ``x`` explained by what the student's code does on one
    [T, T] matrix of it (``compose_of(one)``: the exercise done right on it, as a function of the mask): right there (a size read from the front, shape[0], which is the batch size
    here), or one of ``slips(one)``'s mistakes. None for any other failure."""
    from grader.authoring import RaisedFailure

    if not isinstance(failure, RaisedFailure) or x.dim() < 3:
        return None
    one = x[(0,) * (x.dim() - 2)].clone()  # [T, T]
    tokens = x.shape[-1]
    # (a release: each explanation's computation, whichever the reference's own answers reach first)
    diagnose.rehearse(lambda: compose_of(one)(future_mask(tokens)), *(m.output for m in slips(one)))
    theirs = diagnose.their(grade, name, one)
    if not isinstance(theirs, torch.Tensor):
        return None
    # right on the same batch called plainly (no gradient asked for): the raise is not the batch's (an in-place op)
    again = diagnose.their(grade, name, x.detach().clone())
    if isinstance(again, torch.Tensor) and diagnose.matches(grade, again, compose_of(x.detach())(future_mask(tokens))):
        return CheckFailed(f"{failure.message}\nyour {name} is right on this batch when no gradient is asked for, and "
                           "raised when one is: an in-place operation on its input (masked_fill_, x[...] = ...) or a "
                           "step outside autograd (.numpy(), .data). Compute a new tensor instead "
                           "(scores.masked_fill(mask, ...))")
    if diagnose.matches(grade, theirs, compose_of(one)(future_mask(tokens))):
        return CheckFailed(
            f"{failure.message}\nyour {name} is right on one [{tokens}, {tokens}] matrix but raised on the batch "
            f"{list(x.shape)}: work over the last two dimensions only, whatever comes before them. Read T from the "
            f"end, scores.shape[-1] (shape[0] is the batch size, {x.shape[0]}, for batched input), and build the "
            "[T, T] mask so that it broadcasts over the batch")
    for mistake in slips(one):
        if diagnose.matches(grade, theirs, mistake.output()):
            return CheckFailed(f"{failure.message}\nit raised on the batch {list(x.shape)}; on one [{tokens}, "
                               f"{tokens}] matrix of it, {mistake.explanation}")
    return None


ONE = {"apply_causal_mask": apply_mask, "renormalize_causal_weights": renormalize}  # input -> compose(hidden)


def renormalize_slips(weights):
    """renormalize_causal_weights done with the usual slips: row sums without keepdim=True, a softmax
    taken again instead of dividing by the row sums."""
    def slip(kind):
        return lambda: renormalize_slip(weights, kind)

    return [
        Mistake("sum-without-keepdim", "your row sums are taken without keepdim=True: their shape [..., T] "
                "broadcasts along the last dimension, so entry (i, j) is divided by the sum of row j, not of row i. "
                "Keep the dimension: weights.sum(dim=-1, keepdim=True)", slip("no-keepdim")),
        Mistake(None, "you fill the future with -inf after the softmax, on the weights: the row sums become -inf, "
                "so every entry is 0 or NaN (-inf / -inf). -inf belongs on scores, before a softmax; here zero the "
                "future, weights.masked_fill(mask, 0.0), and divide each row by its sum",
                slip("inf-divided")),
        Mistake(None, "each entry is divided by its column's sum (a sum along dim=-2, the queries), not its row's: "
                "each query's row must sum to 1, so divide by weights.sum(dim=-1, keepdim=True)",
                slip("column-sums")),
        Mistake(None, "you take a softmax again of the weights with the future zeroed: exp(0) = 1 gives the future "
                      "weight back and exp() distorts the past. Renormalise by dividing each row by its sum instead",
                slip("softmax-of-kept")),
        Mistake(None, "you take a softmax again of the kept weights (the future at -inf): that applies exp() to "
                      "weights that are already probabilities. Renormalise by dividing each row by its sum instead",
                slip("softmax-of-hidden"))]


@model
def renormalize_slip(weights, kind):
    """renormalize_causal_weights on ``weights`` with one of :func:`renormalize_slips`' slips (``kind``)."""
    future = future_mask(weights.shape[-1])
    kept = weights.masked_fill(future, 0.0)
    if kind == "no-keepdim":
        return kept / kept.sum(dim=-1)
    if kind == "inf-divided":
        filled = weights.masked_fill(future, float("-inf"))
        return filled / filled.sum(dim=-1, keepdim=True)
    if kind == "column-sums":
        return kept / kept.sum(dim=-2, keepdim=True)
    if kind == "softmax-of-kept":
        return torch.softmax(kept, dim=-1)
    return torch.softmax(weights.masked_fill(future, float("-inf")), dim=-1)  # "softmax-of-hidden"


def causal_masks_as_called(grade, sizes):
    """causal_mask(T) for every T the other exercises' cases call it with: a case of theirs is kept as
    right given the student's causal_mask only on a call its own exercise grades."""
    every_call(grade, causal_mask_same, [(tokens,) for tokens in sizes])


def apply_causal_mask_same(grade, scores, grad=False):
    masked_same(grade, "apply_causal_mask", scores, apply_mask(scores), grad=grad, extra=finite_fills(scores))


def finite_fills(scores):
    """apply_causal_mask with the future filled with a finite number instead of -inf."""
    lowest = torch.finfo(scores.dtype).min if scores.is_floating_point() else None
    fills = [(0.0, "0"), (-1e4, "-1e4"), (-1e9, "-1e9")] + ([(lowest, "the dtype's lowest number")] if lowest else [])
    return [Mistake("mask-fill-finite", f"your mask fills the future's scores with {what} instead of -inf: after the "
                    "softmax the future still gets weight (exp(0) > 0 for a fill of 0), and a row whose scores are as "
                    "low as the fill lets the future through. Fill with float('-inf'): "
                    "scores.masked_fill(mask, float('-inf'))", lambda value=value: filled_future(scores, value))
            for value, what in fills]


@model
def filled_future(scores, value):
    """``scores`` with the future filled with ``value``."""
    return scores.masked_fill(future_mask(scores.shape[-1]), value)


def renormalized_same(grade, weights, grad=False):
    """renormalize_causal_weights, with the mask mistakes and the missing renormalisation named."""
    future = future_mask(weights.shape[-1])
    compose = renormalize(weights)
    # a mask mistake first (masked_same), then the missing renormalisation, on the output the failure carries
    diagnose.diagnosed(
        grade, lambda: masked_same_renormalized(grade, weights, compose, grad=grad), None,
        [Mistake("mask-after-softmax-not-renormalized", "the future is zeroed but the rows no longer sum to 1",
                 lambda: zeroed_future(weights)), *renormalize_slips(weights)],
        right=lambda: compose(future))


@model
def zeroed_future(weights):
    """``weights`` with the future zeroed, not renormalised."""
    return weights.masked_fill(future_mask(weights.shape[-1]), 0.0)


def masked_same_renormalized(grade, weights, compose, grad=False):
    """masked_same for renormalize_causal_weights, whose raise on a batch is explained by its slips too."""
    masks = causal_masks(weights.shape[-1])
    name = "renormalize_causal_weights"
    blame = mask_root_cause(grade, weights, name, compose)
    grade.same(name, weights, grad=grad, mistakes=mask_mistakes(lambda m: compose(masks[m] if m else None)),
               right=lambda: compose(masks["future"]),
               root_cause=lambda failure, out: blame(failure, out)
               or batched_crash_explained(grade, name, weights, failure, ONE[name], renormalize_slips))


@model
def padding_variant(lengths, max_len, kind="right"):
    """padding_mask(lengths, max_len) as the lesson computes it, [B, max_len] (True = padding), or done wrong:
    ``kind`` "inverted" (the real tokens marked), "off-by-one" (position lengths[b] not yet padding)."""
    positions = torch.arange(max_len)[None, :]
    if kind == "inverted":
        return positions < lengths[:, None]
    if kind == "off-by-one":
        return positions > lengths[:, None]
    return positions >= lengths[:, None]


@model
def shrinking_lengths(tokens, dtype):
    """T sequences of T, T - 1, ..., 1 tokens: their lengths, [T]."""
    return torch.arange(tokens, 0, -1, dtype=dtype)


def padding_same(grade, lengths, max_len):
    grade.same("padding_mask", lengths, max_len, right=lambda: padding_variant(lengths, max_len), mistakes=[
        Mistake("mask-inverted", "your mask marks the real tokens; True must mark the padding",
                lambda: padding_variant(lengths, max_len, "inverted")),
        Mistake(None, "your mask is off by one: position lengths[b] is already padding",
                lambda: padding_variant(lengths, max_len, "off-by-one"))])


def causal_padding_same(grade, lengths, tokens):
    """causal_padding_mask matches the reference; if not, blame the student's causal_mask or
    padding_mask when it is theirs that is wrong, or name the mask mistake."""
    masks = causal_masks(tokens)
    padding = padding_variant(lengths, tokens)  # [B, T]

    def combined(future=masks["future"], pad=padding, keys=True):
        return future[None] | (pad[:, None, :] if keys else pad[:, :, None])

    def root_cause(failure, out):
        their_padding = diagnose.their(grade, "padding_mask", lengths, tokens)
        return mistaken.blame(grade, failure, out, "causal_mask", diagnose.their(grade, "causal_mask", tokens),
                              masks["future"], lambda m: combined(future=m),
                              mask_mistakes(lambda name: masks[name] if name else masks["future"]), call=(tokens,)) or \
            mistaken.blame(grade, failure, out, "padding_mask", their_padding,
                           padding, lambda m: combined(pad=m),
                           [Mistake("mask-inverted", "it marks the real tokens, not the padding",
                                    lambda: padding_variant(lengths, tokens, "inverted"))]) or \
            diagnose.device_ignored(grade, failure, "causal_mask", lambda: on_device(grade, tokens),
                                    "causal_padding_mask", (lengths, tokens), combined) or \
            diagnose.device_ignored(grade, failure, "padding_mask", lambda: their_padding,
                                    "causal_padding_mask", (lengths, tokens), combined) or \
            unbroadcast(failure)

    def unbroadcast(failure):
        """A raise for B != T explained by the [T, T] and [B, T] masks combined as they are: with as many
        sequences as tokens (B == T) the student's code returns their [T, T] broadcast."""
        from grader.authoring import RaisedFailure

        if not isinstance(failure, RaisedFailure) or lengths.numel() == tokens or tokens < 2:
            return None
        square = shrinking_lengths(tokens, lengths.dtype)  # T sequences, of T, T - 1, ..., 1 tokens
        theirs = diagnose.their(grade, "causal_padding_mask", square, tokens)
        if not isinstance(theirs, torch.Tensor) or \
                not diagnose.matches(grade, theirs, masks["future"] | padding_variant(square, tokens)):
            return None
        return CheckFailed(f"{failure.message}\n{UNBROADCAST.format(batch=lengths.numel(), tokens=tokens)}")

    causal = [Mistake(m.id, m.explanation, lambda make=m.output: combined(future=make()))
              for m in mask_mistakes(lambda name: masks[name] if name else torch.zeros_like(masks["future"]))]
    grade.same("causal_padding_mask", lengths, tokens, right=lambda: combined(), root_cause=root_cause, mistakes=[
        *causal,
        Mistake("mask-inverted", "your padding part marks the real tokens, not the padding",
                lambda: combined(pad=~padding)),
        Mistake(None, "your padding hides queries (rows) instead of keys (columns)", lambda: combined(keys=False)),
        Mistake(None, "your causal and padding parts are combined with & (and): a key is then hidden only where it is "
                "both in the future and padding, so the future of the real tokens shows. A key is hidden where "
                "either hides it: combine them with | (or)", lambda: masks["future"][None] & padding[:, None, :]),
        Mistake(None, "your mask is only the padding: the future is not hidden",
                lambda: combined(future=torch.zeros_like(masks["future"]))),
        *([Mistake(None, UNBROADCAST.format(batch=lengths.numel(), tokens=tokens), lambda: masks["future"] | padding)]
          if lengths.numel() == tokens else [])])


UNBROADCAST = ("you combine the [T, T] causal mask and the [B, T] padding mask as they are: that raises unless "
               "B == T ({batch} sequences, {tokens} tokens here), and even then pairs padding row b with query b "
               "instead of with every query of sequence b. View them as [1, T, T] and [B, 1, T] so that they "
               "broadcast to [B, T, T]: causal[None] | padding[:, None, :]")


# --- CausalAttention ----------------------------------------------------------------------------------
@model
def projections(weights, x, prefix=""):
    """Queries, keys and values of ``x`` from the weights (``prefix``: "heads.0." for one head)."""
    x = x.detach().cpu()
    with torch.no_grad():
        return tuple(linear(weights, prefix + name, x) for name in ("W_query", "W_key", "W_value"))


def student_module(grade, name, *args, params=None, dtype=None, training=True, **kwargs):
    """The student's own ``name(*args, **kwargs)`` in their worker, with ``params`` (name -> tensor),
    and no reference instance beside it (a root cause may use none): a function calling its forward.
    Raises CheckFailed when the parameters are not named and shaped as ``params``."""
    state = grade.student.request({"op": "new", "name": name, "args": args, "kwargs": kwargs, "dtype": dtype,
                                   "state": True, "training": bool(training), "params": params})
    theirs = {n: tuple(p.shape) for n, p in state.get("params", {}).items()}
    if params is not None and (state.get("loaded") is not True or
                               theirs != {n: tuple(p.shape) for n, p in params.items()}):
        raise CheckFailed(f"{name}: the parameters are not named as the lesson asks")
    handle = HandleRef(state["handle"])
    return lambda *xs, seed=None: grade.call(handle, *xs, seed=seed, label=name).out


def not_truncated(grade, pair, x, fault):
    """A crash for T < context_length that goes away with context_length = T is mask-not-truncated
    (the student's class alone is built again: no reference is needed, so a replay names it too)."""
    args, tokens = pair.args, x.shape[1]
    return mistaken.not_truncated(fault, tokens, args[2], lambda: student_module(
        grade, pair.name, args[0], args[1], tokens, *args[3:], params=pair.weights, dtype=pair.dtype,
        training=False, **pair.kwargs)(x))


def causal_same(grade, pair, x, *, grad=False, seed=None, also=()):
    """The student's CausalAttention gives the reference's output on ``x``; if not, name the mistake:
    a mask buffer used whole (mask-not-truncated), the student's causal_mask (the root cause), or one
    of attention's usual mistakes, recomputed from the pair's weights (without dropout: the checks
    that diagnose run in evaluation mode or without dropout); ``also``: more mistakes, as (q, k, v) ->
    Mistake."""
    def attention():
        q, k, v = projections(pair.weights, x)
        return q, k, v, dict(scale=k.shape[-1] ** -0.5)

    tokens = x.shape[1]
    try:
        return pair.same(x, grad=grad, seed=seed)
    except StudentFault as fault:
        found = not_truncated(grade, pair, x, fault)
        if found is fault:  # raised as the right computation does on their causal_mask?
            q, k, v, settings = attention()
            found = diagnose.raised(grade, fault, lambda failure, out: causal_mask_root_cause(
                grade, failure, out, tokens, lambda m: mistaken.attend(q, k, v, hidden=m, rows="nan", **settings)))
        raise found from None
    except CheckFailed as failure:
        if failure.misconceptions or failure.out is None:
            raise
        out = failure.out  # the student's output, carried by the failure
        q, k, v, settings = attention()
        future = future_mask(tokens)
        right = mistaken.attend(q, k, v, hidden=future, **settings)
        candidates = mistaken.attention_mistakes(q, k, v, hidden=future, causal=True, inputs=x, roles=True, **settings) + \
            mistaken.role_mistakes({"query": q, "key": k, "value": v},
                                   lambda *qkv: mistaken.attend(*qkv, hidden=future, **settings)) + \
            [make(q, k, v) for make in also]
        raise diagnose.cause(grade, lambda f, o: causal_mask_root_cause(  # torch.softmax, as a class would
            grade, f, o, tokens, lambda m: mistaken.attend(q, k, v, hidden=m, rows="nan", **settings)),
            failure, out) or name_mistake(grade, failure, out, candidates, right) from None


def far_below_zero(grade, pair, batch, tokens, *, level=1e4, spread=1e-4):
    """[batch, tokens, d_in] float64 inputs whose every score q·k/sqrt(d_k) is about ``-level``: one
    direction per batch, the one the pair's W_query and W_key send to opposite sides (the most negative
    eigenvector of the symmetric part of W_queryᵀ W_key), plus noise of ``spread`` times its length, so
    that a row's scores differ by a few units. None where the weights have no such direction (no bias:
    the module is built with qkv_bias=False)."""
    found = lowest_direction(pair.weights["W_query.weight"], pair.weights["W_key.weight"], level)
    if found is None:
        return None
    direction, norm = found
    noise = grade.randn(batch, tokens, direction.shape[0], dtype=torch.float64, scale=spread * norm)
    return direction + noise  # [B, T, d_in]


@model
def lowest_direction(w_query, w_key, level):
    """``(direction, its norm)``: the inputs' direction whose score with itself is about ``-level`` (the most
    negative eigenvector of the symmetric part of W_queryᵀ W_key, scaled), or None where there is none."""
    w_query, w_key = w_query.double(), w_key.double()  # [d_out, d_in]
    product = w_query.T @ w_key  # [d_in, d_in]: the score of x with y is x · product · y / sqrt(d_out)
    values, vectors = torch.linalg.eigh((product + product.T) / 2)
    if values[0] > -1e-3 * values.abs().max():
        return None
    norm = (level * w_query.shape[0] ** 0.5 / -values[0].item()) ** 0.5
    return vectors[:, 0] * norm, norm  # [d_in]


def finite_fill(value):
    """The mistake of filling the future's scores with ``value`` (GPT-2's old -1e4) instead of -inf."""
    def make(q, k, v):
        return Mistake("mask-fill-finite", f"your mask fills the future's scores with a finite number ({value:g}) "
                       f"instead of -inf: where the scores a query may see are as low as it (here about -10000), "
                       f"the hidden future takes weight. Fill with -inf", lambda: finite_filled(q, k, v, value))
    return make


@model
def finite_filled(q, k, v, value):
    """Causal attention whose future's scores are filled with ``value`` instead of -inf."""
    scores = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5  # [B, T, T]
    weights = torch.softmax(scores.masked_fill(future_mask(q.shape[-2]), value), dim=-1)
    return weights @ v


def expect_masked_below_any_fill(grade, pair, batch, tokens):
    """Scores of about -10000: a mask must hide the future whatever the scores, which a finite fill such
    as GPT-2's old -1e4 does only while the scores stay far above it (Hugging Face transformers issue 3181)."""
    x = far_below_zero(grade, pair, batch, tokens)
    if x is not None:
        causal_same(grade, pair, x, also=[finite_fill(-1e4)])


def causal_right(pair, x):
    """CausalAttention's right output on ``x`` without dropout, from the pair's weights."""
    q, k, v = projections(pair.weights, x)
    return mistaken.attend(q, k, v, scale=k.shape[-1] ** -0.5, hidden=future_mask(x.shape[1]))


def expect_causal_dropout(grade, pair, *, tokens, p, batch=2):
    """Dropout by its effect (lesson/dropout.py), the evaluation-mode output diagnosed as causal_same."""
    expect_dropout_on_weights(grade, pair, tokens=tokens, p=p, batch=batch,
                              eval_same=lambda x: causal_same(grade, pair, x), right=lambda x: causal_right(pair, x))


def expect_eval_deterministic(grade, pair, x):
    """In eval mode (the pair made with dropout > 0) two calls agree, and the output is right."""
    pair.train(False)
    try:
        first = pair.call(x, seed=1).out
        second = pair.call(x, seed=2).out
    except (StudentFault, CheckFailed):
        causal_same(grade, pair, x, seed=3)  # the raise judged there: the causal_mask's, when it raises so too
        raise
    grade.expect_close(second, first, "in eval mode, CausalAttention(dropout=0.5) gave different outputs on two "
                       "calls with the same input: dropout must be off outside training", ("dropout-in-eval",))
    causal_same(grade, pair, x, seed=3)


def expect_structure(grade, pair, x, context_length):
    """An nn.Dropout named dropout and the causal mask as a buffer, read from the module the student's
    process built; the point comes with a right output only (the eval-mode forward on ``x``). The
    contract asks for a buffer, not its convention: any registered buffer that covers context_length ×
    context_length tokens (the book's triu of ones [T, T], nanoGPT's tril [1, 1, T, T], boolean, float,
    additive) passes, since the right eval-mode output already shows that the masking made from it is
    right. A buffer is registered when it is among the module's buffers (it moves with .to())."""
    causal_same(grade, pair.train(False), x)
    kind = pair.state["modules"].get("dropout")
    if kind != "Dropout":
        raise CheckFailed(f"CausalAttention should have an nn.Dropout named 'dropout', but 'dropout' is "
                          f"{'missing' if kind is None else 'a ' + kind}")
    if any(covers(b, context_length) for b in pair.state["buffers"].values()):
        return
    wanted = ("CausalAttention should register its causal mask as a buffer (self.register_buffer(\"mask\", ...), "
              "in any convention: True or 1 where hidden, or where visible; [T, T] or [1, 1, T, T]) covering "
              "context_length × context_length tokens, so that it moves with the module's .to(device)")
    plain = [name for name, value in pair.attributes("mask", "causal_mask", "bias").items()
             if isinstance(value, torch.Tensor) and covers(value, context_length)]
    if plain:
        raise CheckFailed(f"{wanted}; self.{plain[0]} is a plain tensor attribute, not a registered buffer")
    raise CheckFailed(f"{wanted}; your module has no such buffer")


def covers(buffer, context_length) -> bool:
    """Whether ``buffer`` can hold a causal mask for context_length tokens: its last two dimensions have
    at least context_length entries each, any leading ones have one."""
    shape = tuple(getattr(buffer, "shape", ()))
    return len(shape) >= 2 and all(n == 1 for n in shape[:-2]) and min(shape[-2:]) >= context_length
