"""Attention as the usual mistakes compute it: the wrong computations the suites name mistakes by.

Each function returns candidates ``(misconception id or None, explanation, output or a function
computing it)`` (grader.authoring.Mistake has the same fields), computed from the reference's own
intermediate values, for ``grade.same(..., mistakes=...)`` or grader.grading.diagnose to compare with the
student's output. Shipped with the public suites: these are wrong answers (and the plain-torch
attention they are built on), never the reference's code.
"""
from __future__ import annotations

from typing import Callable

from grader.authoring import CheckFailed, FactorSearch, Mistake, StudentFault, diagnose, manual_seed, model

# an output with inf or NaN where the right one is finite, once no other mistake explains it
UNSTABLE = ("softmax-unstable", "your output has inf or NaN where the right answer is finite: exp() overflowed, "
                                "or an all -inf slice gave 0/0")


class ScaleSearch(FactorSearch):
    """Attention whose scores are scaled by some constant, ``make(c)``: missing-scale when the closest
    constant is 1, wrong-scale for any other (1/8 written by hand, 1/sqrt of the input width)."""

    def __init__(self, make: Callable, right: float, named: str = "1/sqrt(d_k)"):
        super().__init__(make, right, named, ids=("missing-scale", "wrong-scale"), what="your scores")


def unstable_unless_named(check: Callable):
    """``check()``; a failure that names no mistake, on an output with inf or NaN (where the suite knows
    the right one is finite), is softmax-unstable. Named after the candidates, never before: a mask
    that hides a whole row gives NaN too, and is named as such."""
    return diagnose.non_finite_unless_named(check, UNSTABLE)


def blame(*args, **kwargs):
    """grader's diagnose.blame: the root cause, when an exercise is right but for a helper it uses; a
    helper's inf or NaN where the right result is finite is softmax-unstable."""
    return diagnose.blame(*args, non_finite=UNSTABLE, **kwargs)


def not_truncated(fault: StudentFault, tokens: int, context_length: int, runs_when_as_long: Callable):
    """A crash on ``tokens`` < ``context_length`` tokens that names the context length and goes away
    with a class built for a context just as long (``runs_when_as_long()`` builds and calls it) is a
    mask buffer used whole: mask-not-truncated. Otherwise ``fault`` itself."""
    if fault.kind != "error" or tokens >= context_length or not diagnose.mentions(fault, context_length):
        return fault
    try:
        runs_when_as_long()
    except (StudentFault, CheckFailed):
        return fault
    return CheckFailed(f"it fails on {tokens} tokens with context_length = {context_length} but runs with "
                       f"context_length = {tokens}: use only the top-left [:T, :T] corner of the causal mask "
                       f"buffer, mask[:T, :T]. Your code raised:\n{fault.message}", ("mask-not-truncated",))


@model
def safe_softmax(x, dim=-1):
    """A softmax whose all -inf slices give zeros, as the course asks (torch.softmax gives NaN there)."""
    import torch

    if isinstance(dim, tuple):  # several dimensions normalised together, as one flattened dimension
        return _softmax_together(x, dim)
    return torch.softmax(x, dim=dim).masked_fill(torch.isneginf(x).all(dim=dim, keepdim=True), 0.0)


@model
def _softmax_together(x, dims: tuple):
    """safe_softmax over ``dims`` at once: what a softmax of ``x`` viewed with those dimensions flattened
    into one gives (``scores.view(-1, Tk).softmax(0)`` normalises the batch and the queries together)."""
    import torch

    dims = tuple(sorted(d % x.dim() for d in dims))
    rest = [d for d in range(x.dim()) if d not in dims]
    moved = x.permute(*rest, *dims)
    flat = moved.reshape(*moved.shape[:len(rest)], -1)
    out = safe_softmax(flat, -1).reshape(moved.shape)
    return out.permute(*torch.argsort(torch.tensor([*rest, *dims])).tolist())


def softmax_mistakes(x, dim=-1) -> list:
    """Softmaxes of ``x`` along the wrong dimension (another one, or all of them at once)."""
    dim = dim % max(x.dim(), 1)
    mistakes = [Mistake("softmax-wrong-dim", f"your output is the softmax along dimension {other}, not {dim}",
                        lambda other=other: safe_softmax(x, other)) for other in range(x.dim()) if other != dim]
    if x.dim() > 1:
        mistakes.append(Mistake("softmax-wrong-dim", "your output is normalised over the whole tensor, not along "
                                "one dimension", lambda: _softmax_whole(x)))
    for other in range(x.dim()):  # the maximum subtracted along dim, the sum taken along another (issue 45)
        if other != dim:
            said = (f"your softmax subtracts each slice's maximum along dimension {dim} but sums the exponentials "
                    f"along dimension {other}: sum along the same dimension, {dim}")
            mistakes += [Mistake("softmax-wrong-dim", said, lambda other=other, guarded=guarded:
                                 _summed_along(x, dim, other, guarded)) for guarded in (False, True)]
    return mistakes


@model
def _softmax_whole(x):
    """safe_softmax over every entry of ``x`` at once, in ``x``'s shape."""
    return safe_softmax(x.flatten(), 0).reshape(x.shape)


@model
def _summed_along(x, dim: int, other: int, guarded: bool):
    """exp(x - max along ``dim``) / its sum along ``other``: plainly, or ``guarded`` as the lesson's stable
    softmax is (an all -inf slice shifted by 0, the sum clamped to at least 1)."""
    import torch

    shift = x.amax(dim=dim, keepdim=True)
    if guarded:
        shift = torch.where(torch.isinf(shift), torch.zeros_like(shift), shift)
    exp = torch.exp(x - shift)
    total = exp.sum(dim=other, keepdim=True)
    return exp / (total.clamp_min(1.0) if guarded else total)


@model
def attend(q, k, v=None, *, scale=1.0, hidden=None, mask="before", dim=-1, transposed=False,
           dropout=None, dropout_on="weights", seed=None, rows="zero"):
    """Attention as a mistake computes it, in plain torch.

    ``scale`` multiplies the scores (``transposed``: K Qᵀ instead of Q Kᵀ). ``hidden`` (bool, True =
    hidden) is applied ``mask="before"`` the softmax as -inf, ``"after"`` it by zeroing without
    renormalising, or ``"zero"``: hidden scores set to 0. ``dim``: the softmax's dimension. ``rows``:
    what a row whose keys are all hidden gets: ``"zero"`` weights (the course's rule), ``"nan"`` (what
    torch.softmax gives for -inf), or ``"uniform"`` weights (what a large negative fill gives). ``dropout``
    (a module, run after ``torch.manual_seed(seed)``) acts on the ``"weights"``, the ``"scores"`` after
    masking, the ``"raw-scores"`` before it, or the ``"output"``. Returns the weights, or weights @ ``v``.
    """
    import torch

    def drop(where, t):
        return dropout(t) if dropout is not None and dropout_on == where else t

    if seed is not None:
        manual_seed(seed)
    scores = drop("raw-scores", (k @ q.transpose(-2, -1) if transposed else q @ k.transpose(-2, -1)) * scale)
    if hidden is not None and mask == "before" and rows == "additive":  # BERT's (1 - m) * -10000 added
        scores = scores + hidden.to(scores.dtype) * -10000.0
    elif hidden is not None and mask in ("before", "zero"):
        scores = scores.masked_fill(hidden, float("-inf") if mask == "before" else 0.0)
    scores = drop("scores", scores)
    if rows == "uniform":
        scores = scores.masked_fill(torch.isneginf(scores), -1e9)
    weights = safe_softmax(scores, dim) if rows in ("zero", "additive") or isinstance(dim, tuple) \
        else torch.softmax(scores, dim)
    if hidden is not None and mask in ("after", "after-inf"):
        weights = weights.masked_fill(hidden, 0.0 if mask == "after" else float("inf"))
    weights = drop("weights", weights)
    return weights if v is None else drop("output", weights @ v)


HIDDEN_ROWS = ("zero", "nan", "uniform")  # see attend's ``rows``


@model
def linear(weights, name, x):
    """The linear layer ``name`` (e.g. "W_query", "heads.0.W_key") of a module pair's ``weights``
    ({parameter name: tensor}) applied to ``x``, on x's device and in the weights' dtype, as the module
    computes it (another dtype raises as it does there)."""
    import torch

    bias = weights.get(f"{name}.bias")
    return torch.nn.functional.linear(x, weights[f"{name}.weight"].to(x.device),
                                      None if bias is None else bias.to(x.device))


def _joint_dims(rank: int) -> list[tuple]:
    """The sets of two or more of the scores' ``rank`` dimensions a softmax may wrongly normalise together
    (the batch and the queries flattened, the queries and the keys, everything)."""
    import itertools

    return [dims for size in range(2, rank + 1) for dims in itertools.combinations(range(rank), size)]


def _dims_said(dims: tuple, rank: int) -> str:
    names = {rank - 1: "the keys", rank - 2: "the queries", 0: "the batch"}
    said = [names.get(d, f"batch dimension {d}") for d in dims]
    return ", ".join(said[:-1]) + " and " + said[-1]


@model
def causal_variants(tq, tk, device=None) -> dict:
    """Boolean masks (True = hidden) for a causal mask done right and done wrong."""
    import torch

    ones = torch.ones(tq, tk, dtype=torch.bool, device=device)
    return {"future": ones.triu(1), "past": ones.tril(-1), "past-and-diagonal": ones.tril(0),
            "future-and-diagonal": ones.triu(0)}


def attention_mistakes(q, k, v=None, *, scale, hidden=None, causal=False, dropout=None, seed=None,
                       mask_fill_zero=True, inputs=None, roles=False) -> list:
    """Candidates for attention of ``q`` over ``k`` (and ``v``) with the usual mistakes, each computed
    from the right projections: the scale, the scores' orientation, the softmax's dimension, the mask,
    the values (the keys, the queries, or the raw ``inputs`` in their place), and with ``dropout``
    (under ``seed``) its placement. ``hidden`` is the right mask; ``causal`` says it is the causal one
    (so that the past and the diagonal can be tried). ``roles``: the caller tries the projections in every
    role too (:func:`role_mistakes`), where the keys or the queries used as values cannot be told from values
    taken from W_key or W_query, so those two are left to it (which names neither id)."""
    def variant(**changes):
        settings = dict(scale=scale, hidden=hidden, dropout=dropout, seed=seed)
        settings.update(changes)
        return lambda: attend(q, k, v, **settings)

    d_k = k.shape[-1]
    found = [
        Mistake("missing-scale", "your scores are not scaled", variant(scale=1.0)),
        Mistake("wrong-scale", "your scores are divided by d_k, not sqrt(d_k)", variant(scale=1.0 / d_k)),
        Mistake("wrong-scale", "your scores are multiplied by sqrt(d_k), not divided", variant(scale=1.0 / scale)),
        Mistake("scores-transposed", "your scores are K Qᵀ, not Q Kᵀ", variant(transposed=True)),
        ScaleSearch(lambda c: attend(q, k, v, scale=c, hidden=hidden, dropout=dropout, seed=seed), scale),
        Mistake("missing-scale", "your scores are not scaled before the softmax: you scale the weights after it, "
                "so they no longer sum to 1 (the scale belongs on the scores)",
                lambda: attend(q, k, v, scale=1.0, hidden=hidden, dropout=dropout, seed=seed) * scale),
    ]
    for rows in HIDDEN_ROWS if hidden is not None else HIDDEN_ROWS[:1]:  # a softmax may see only hidden scores
        found += [Mistake("softmax-wrong-dim", "your softmax runs over the queries, not the keys",
                          variant(dim=-2, rows=rows))]
        found += [Mistake("softmax-wrong-dim", f"your softmax runs over dimension {dim} (a batch dimension), not "
                          "the keys", variant(dim=dim, rows=rows)) for dim in range(q.dim() - 2)]
    found += [Mistake("softmax-wrong-dim", f"your softmax normalises {_dims_said(dims, q.dim())} together, as one "
                      "flattened dimension: it must run over the keys alone, each query's row on its own",
                      variant(dim=dims)) for dims in _joint_dims(q.dim())]
    if hidden is not None:
        found.append(Mistake("mask-not-applied", "the mask has no effect on your output", variant(hidden=None)))
        if causal:
            masks = causal_variants(q.shape[-2], k.shape[-2], q.device)
            for rows in HIDDEN_ROWS:  # these masks hide every key of a row, which code may treat three ways
                found += [Mistake("mask-inverted", "your mask hides the past and the token itself, and shows the "
                                  "future", variant(hidden=masks["past-and-diagonal"], rows=rows)),
                          Mistake("mask-hides-diagonal", "your mask hides the diagonal too: a token may attend to "
                                  "itself", variant(hidden=masks["future-and-diagonal"], rows=rows))]
            found.append(Mistake("mask-inverted", "your mask hides the past instead of the future",
                          variant(hidden=masks["past"])))
        else:
            found += [Mistake("mask-inverted", "the positions marked True are the visible ones in your code",
                       variant(hidden=~hidden, rows=rows)) for rows in (*HIDDEN_ROWS, "additive")]
        found.append(Mistake("mask-after-softmax-not-renormalized", "you zero the hidden weights after the softmax "
                      "without renormalising", variant(mask="after")))
        found.append(Mistake(None, "you fill the hidden weights after the softmax, and with +inf (-float('-inf') is "
                             "+inf): every query that has a hidden key gets inf or NaN. Fill the scores with "
                             "float('-inf') before the softmax", variant(mask="after-inf")))
        found.append(Mistake("mask-fill-finite", "your hidden scores are filled with a large finite negative number, "
                             "not -inf: a query whose keys are all hidden then gets uniform weights over them, where "
                             "it must get all-zero weights (and a zero output). Fill with -inf, and give such a row "
                             "zeros",
                             variant(rows="uniform")))
        found.append(Mistake("mask-fill-finite", "your mask adds a finite -10000 to the hidden scores (BERT's "
                             "additive mask), not -inf: a query whose keys are all hidden keeps the softmax of its "
                             "own scores, where it must get all-zero weights (and large scores outweigh it). Fill "
                             "with -inf, and give such a row zeros", variant(rows="additive")))
        if mask_fill_zero:
            found.append(Mistake(None, "your hidden scores are set to 0 instead of -inf, so they still get weight",
                          variant(mask="zero")))
    if v is not None:
        instead = {"inputs": inputs} if roles else {"keys": k, "queries": q, "inputs": inputs}
        found += [Mistake("values-not-used", f"your weights multiply the {name}, not the values",
                   lambda t=t: attend(q, k, t, scale=scale, hidden=hidden, dropout=dropout, seed=seed))
                  for name, t in instead.items() if t is not None]
    if dropout is not None:
        found += [Mistake("dropout-on-scores", "your dropout acts on the scores before the softmax",
                   variant(dropout_on="scores")),
                  Mistake("dropout-on-scores", "your dropout acts on the scores before the mask and the softmax",
                   variant(dropout_on="raw-scores"))]
        if v is not None:
            found.append(Mistake(None, "your dropout acts on the output; it belongs on the attention weights",
                          variant(dropout_on="output")))
    return found


_PLURAL = {"query": "queries", "key": "keys", "value": "values"}


def role_mistakes(project: dict, attend_roles: Callable) -> list:
    """Candidates with a projection in the wrong role. ``project`` maps "query", "key", "value" to the
    projected tensors (computed from the inputs each role should read); ``attend_roles(q, k, v)`` is
    the right attention on them. The queries and keys exchanged is scores-transposed (the same output);
    the keys' or queries' projection in place of the values is named by no id (values taken from that
    weight, qkv-swapped, and the keys or queries used as values, values-not-used, give the same output);
    any other assignment is qkv-swapped."""
    return [Mistake(*named, lambda chosen=chosen: attend_roles(*(project[r] for r in chosen)))
            for chosen, named in wrong_roles()]


ROLES = ("query", "key", "value")


def wrong_roles() -> list:
    """``(roles, (misconception, explanation))`` for every wrong choice of which projection plays the
    query, the key and the value (see :func:`role_mistakes`)."""
    import itertools

    found = []
    for chosen in itertools.product(ROLES, repeat=3):
        if chosen == ROLES or chosen == ("key", "query", "value"):
            continue
        if chosen[:2] == ("query", "key"):  # values from W_key, or the keys used as values: the same output,
            # so neither qkv-swapped nor values-not-used can be claimed
            named = (None, f"your weights multiply the {chosen[2]} projection W_{chosen[2]}(x), not the values: "
                           f"either the values come from W_{chosen[2]}, or the {_PLURAL[chosen[2]]} are used as values")
        else:
            named = ("qkv-swapped", "your " + ", ".join(f"{_PLURAL[role]} come from W_{source}"
                                                        for role, source in zip(ROLES, chosen) if role != source))
        found.append((chosen, named))
    return found
